"""Norm-based attention (Kobayashi et al. 2020): || sum_h alpha^h_ij f^h(x_j) ||, the pooled position's row of
the last layer (textcls.interpret.context_mixing.norm)."""
from __future__ import annotations

from textcls.interpret.methods._context_mixing import applies, explainer
from textcls.interpret.methods.registry import register_method

register_method("norm", "Norm-based attention (Kobayashi)", short="norm", kind="context mixing",
                signed=False, needs_gradients=False, uses_baseline=False,
                cost="pass", applies=applies("norm"), bucketed=False,
                help="the attention weight times the size of the value it moves (Kobayashi et al. 2020)",
                )(explainer("norm"))
