"""DecompX (Modarressi et al. 2023): each layer's output decomposed into one part per input token, pushed
through attention, the feed-forward layers and the classifier head: the predicted class's logit per token
(textcls.interpret.context_mixing.decompx)."""
from __future__ import annotations

from textcls.interpret.methods._context_mixing import applies, explainer
from textcls.interpret.methods.registry import register_method

register_method("decompx", "DecompX", short="DecompX", kind="context mixing",
                signed=True, needs_gradients=False, uses_baseline=False,
                cost="pass", applies=applies("decompx"), bucketed=False,
                help="each token's part of the logit through attention, FFN and head (Modarressi et al. 2023)",
                )(explainer("decompx"))
