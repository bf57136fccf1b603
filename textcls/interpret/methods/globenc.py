"""GlobEnc (Modarressi et al. 2022): the norm of each token's share after attention, the residual and the layer
norm, rolled out over the layers (textcls.interpret.context_mixing.globenc)."""
from __future__ import annotations

from textcls.interpret.methods._context_mixing import applies, explainer
from textcls.interpret.methods.registry import register_method

register_method("globenc", "GlobEnc", short="GlobEnc", kind="context mixing",
                signed=False, needs_gradients=False, uses_baseline=False,
                cost="pass", applies=applies("globenc"), bucketed=False,
                help="norms through the residual and the layer norm, rolled out (Modarressi et al. 2022)",
                )(explainer("globenc"))
