"""A model family opts into the context-mixing methods by declaring the capability (`context_mixing = NAME` on its
class) and registering a reader for it (`context_mixing.register_family`): no class check to edit. The toy family
here is a Transformer under another capability name whose reader delegates to the Transformer's, so each method's
answer is known: the Transformer's own on the same weights."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import textcls
from textcls.interpret import context_mixing as cm
from textcls.interpret import methods as M
from textcls.interpret.context_mixing import trace as tr
from textcls.interpret.instances import Instance
from textcls.models.transformer import Transformer


class ToyMixer(Transformer):
    context_mixing = "toy_mixer"


def _pair():
    torch.manual_seed(0)
    ref = textcls.create_model("transformer", vocab_size=30, num_labels=2, preset="small", dropout=0.0).eval()
    toy = ToyMixer(ref.config).eval()
    toy.load_state_dict(ref.state_dict())
    return ref, toy


def test_a_family_opts_in_by_declaring_the_capability_and_registering_a_reader():
    ref, toy = _pair()
    inst = [Instance(ids=torch.tensor([3, 7, 9, 4, 12]), mask=torch.ones(5, dtype=torch.bool))]
    assert cm.methods_for(toy) == [] and "no self-attention" in cm.applicable(toy)["norm"]
    assert M.why_not(toy, "alti") is not None                       # the method registry reads the same rule
    read = []

    def reader(model, ids, mask):
        read.append(ids.shape)
        return tr.READERS["transformer"](model, ids, mask)
    cm.register_family("toy_mixer", trace=reader, applicable=lambda model: dict.fromkeys(cm.METHODS))
    try:
        assert cm.methods_for(toy) == list(cm.METHODS) and M.why_not(toy, "alti") is None
        with pytest.raises(ValueError, match="already registered"):
            cm.register_family("toy_mixer", trace=reader, applicable=lambda model: {})
        for method in ("norm", "globenc", "alti", "value_zeroing", "decompx"):
            if cm.applicable(ref)[method] is not None:
                continue
            mine = cm.explain_instances(toy, inst, method)[0].scores
            theirs = cm.explain_instances(ref, inst, method)[0].scores
            assert np.allclose(mine, theirs, atol=1e-6), method
        assert read and all(s == (1, 5) for s in read)
    finally:
        del cm._APPLICABLE["toy_mixer"], tr.READERS["toy_mixer"]
    assert cm.methods_for(toy) == []


def test_every_shipped_family_declares_its_capability_or_none():
    from textcls.models.registry import list_models, get_entry
    declared = {name: getattr(get_entry(name).cls, "context_mixing", None) for name in list_models()}
    assert declared["transformer"] == "transformer" and declared["act"] == "act"
    assert {v for k, v in declared.items() if k not in ("transformer", "act")} <= {None}
    assert set(tr.READERS) >= {"transformer", "act", "hf"}
