"""ALTI (Ferrando et al. 2022): contributions measured by the Manhattan distance of each token's transformed
vector to the layer's output, through the residual and the layer norm, rolled out
(textcls.interpret.context_mixing.alti)."""
from __future__ import annotations

from textcls.interpret.methods._context_mixing import applies, explainer
from textcls.interpret.methods.registry import register_method

register_method("alti", "ALTI", short="ALTI", kind="context mixing",
                signed=False, needs_gradients=False, uses_baseline=False,
                cost="pass", applies=applies("alti"), bucketed=False,
                help="each token's contribution by distance to the layer output, rolled out (Ferrando et al. 2022)",
                )(explainer("alti"))
