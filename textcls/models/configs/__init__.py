"""The model families' configs, one file per family, without torch (as Hugging Face's configuration_*.py): each
holds the family's config dataclass and declares the family - its name, presets, variants, input kind and the
module of its model class (`registration.declare_model`). Importing this package enrols every built-in family, so
the registry lists, describes and configures them (the Train page's form, the CLI's `models`) without importing
torch; a family's model class is imported the first time `ModelEntry.cls` is read."""
from textcls.models.configs import act, agcnn, hcan, kim_cnn, lama, transformer  # noqa: F401  (declared on import)
