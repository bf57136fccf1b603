"""Value zeroing (Mohebbi et al. 2023): the cosine distance of each position's layer output when one token's
value vector is zeroed, rolled out over the layers; one layer pass per token, batched
(textcls.interpret.context_mixing.value_zeroing)."""
from __future__ import annotations

from textcls.interpret.methods._context_mixing import applies, explainer
from textcls.interpret.methods.registry import register_method

register_method("value_zeroing", "Value zeroing", short="value zeroing", kind="context mixing",
                signed=False, needs_gradients=False, uses_baseline=False,
                cost="per word", applies=applies("value_zeroing"), bucketed=False,
                help="how far the outputs move when a token's value is zeroed, rolled out (Mohebbi et al. 2023)",
                )(explainer("value_zeroing"))
