"""The models, one file per family; importing this package registers every one of them. Shared blocks are in
`layers`, the base class and Probe in `base`; a model file never imports another model file."""
from textcls.models import act, agcnn, hcan, kim_cnn, lama, transformer  # noqa: F401  (registration on import)
