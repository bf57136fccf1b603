"""Contract tests for every registered model and every variant it declares (enrolled by registration)."""
import pytest
import torch

import textcls
from textcls.models.registry import get_entry

VOCAB, LABELS = 60, 3
SEQ_AXES = ("token", "query_token", "key_token", "word", "query_word", "key_word",
            "sentence", "query_sentence", "key_sentence")

CASES = [(name, None) for name in textcls.list_models()] + [
    (name, v) for name in textcls.list_models() for v in get_entry(name).variants]


def case_id(c):
    return c[0] if c[1] is None else f"{c[0]}-{c[1]}"


def build(name, variant=None, **kw):
    torch.manual_seed(0)
    model = textcls.create_model(name, vocab_size=VOCAB, num_labels=LABELS, preset="small", variant=variant, **kw)
    return model.eval()


def make_batch(name, lengths=(9, 5, 1), sentences=((3, 4, 2), (2, 3), (1,))):
    """Token ids (B, L) or (B, S, W) and mask; example 0 has no padding at all."""
    g = torch.Generator().manual_seed(1)
    if get_entry(name).input_kind == "sentences":
        S = max(len(s) for s in sentences)
        W = max(max(s) for s in sentences)
        ids = torch.zeros(len(sentences), S, W, dtype=torch.long)
        for b, sent in enumerate(sentences):
            for s, w in enumerate(sent):
                ids[b, s, :w] = torch.randint(2, VOCAB, (w,), generator=g)
        # example 0 fully real
        ids[0] = torch.randint(2, VOCAB, (S, W), generator=g)
    else:
        L = max(lengths)
        ids = torch.zeros(len(lengths), L, dtype=torch.long)
        for b, n in enumerate(lengths):
            ids[b, :n] = torch.randint(2, VOCAB, (n,), generator=g)
    return ids, ids != 0


def seq_sizes(ids):
    """Expected size of each sequence axis for input ids."""
    if ids.dim() == 3:
        S, W = ids.shape[1:]
        return {"sentence": S, "query_sentence": S, "key_sentence": S, "word": W, "query_word": W, "key_word": W}
    L = ids.shape[1]
    return {"token": L, "query_token": L, "key_token": L}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_shapes_and_maps(case):
    model = build(*case)
    ids, mask = make_batch(case[0])
    out = model(ids, mask)
    assert out.logits.shape == (ids.shape[0], LABELS)
    assert out.maps == {}
    out = model(ids, mask, return_maps=True)
    specs = model.map_specs()
    assert specs, "a model must declare at least one map"
    assert sorted(s.name for s in specs) == sorted(out.maps), "maps returned must match map_specs()"
    sizes = seq_sizes(ids)
    for spec in specs:
        t = out.maps[spec.name]
        assert t.shape[0] == ids.shape[0] and t.dim() == 1 + len(spec.axes), (spec, t.shape)
        for axis, n in zip(spec.axes, t.shape[1:]):
            if axis in sizes:
                assert n == sizes[axis], f"{spec.name}: axis {axis} has {n}, input has {sizes[axis]}"
        assert torch.isfinite(t.float()).all(), spec.name
    assert torch.isfinite(out.logits).all()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_padding_never_changes_outputs(case):
    name = case[0]
    model = build(*case)
    ids, mask = make_batch(name)
    ref = model(ids, mask, return_maps=True)
    # more padding, with garbage ids at every pad position
    big = torch.nn.functional.pad(ids, (0, 7) if ids.dim() == 2 else (0, 4, 0, 2))  # more words and sentences
    big_mask = torch.zeros_like(big, dtype=torch.bool)
    big_mask[tuple(slice(0, n) for n in mask.shape)] = mask
    garbage = torch.randint(2, VOCAB, big.shape)
    big = torch.where(big_mask, big, garbage)
    out = model(big, big_mask, return_maps=True)
    torch.testing.assert_close(out.logits, ref.logits, atol=1e-5, rtol=1e-4)
    # maps agree on the original extent of every sequence axis
    orig = seq_sizes(ids)
    for spec in model.map_specs():
        t = out.maps[spec.name]
        idx = [slice(None)] + [slice(0, orig[a]) if a in orig else slice(None) for a in spec.axes]
        got, want = t[tuple(idx)], ref.maps[spec.name]
        if spec.values == "index":  # argmax ties may differ only where the values tie; compare values' shape
            assert got.shape == want.shape
            continue
        torch.testing.assert_close(got.float(), want.float(), atol=1e-5, rtol=1e-4, msg=spec.name)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_attention_rows_sum_to_one(case):
    model = build(*case)
    ids, mask = make_batch(case[0])
    out = model(ids, mask, return_maps=True)
    att = [s for s in model.map_specs() if s.kind == "attention" and s.values == "real"]
    for spec in att:
        sums = out.maps[spec.name].sum(-1)
        close1 = (sums - 1).abs() < 1e-4
        close0 = sums.abs() < 1e-6
        assert (close1 | close0).all(), f"{spec.name}: rows must sum to 1 (real) or 0 (padding)"
        assert close1[0].all(), f"{spec.name}: the unpadded example must have every row summing to 1"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_all_pad_and_short_inputs(case):
    name = case[0]
    model = build(*case)
    if get_entry(name).input_kind == "sentences":
        ids, mask = make_batch(name, sentences=((1,), (2,)))
    else:
        ids, mask = make_batch(name, lengths=(1, 2))
    allpad = torch.zeros((1,) + ids.shape[1:], dtype=torch.long)
    ids = torch.cat([ids, allpad])
    mask = torch.cat([mask, allpad.bool()])
    out = model(ids, mask, return_maps=True)
    assert torch.isfinite(out.logits).all()
    for k, t in out.maps.items():
        assert torch.isfinite(t.float()).all(), k


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_parameter_gets_a_gradient(case):
    model = build(*case).train()
    ids, mask = make_batch(case[0])
    out = model(ids, mask)
    loss = torch.nn.functional.cross_entropy(out.logits, torch.tensor([0, 1, 2]))
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not missing, f"parameters without gradient: {missing}"
    bad = [n for n, p in model.named_parameters() if p.grad is not None and not torch.isfinite(p.grad).all()]
    assert not bad, bad


@pytest.mark.parametrize("name", textcls.list_models())
def test_tiny_training_lowers_loss(name):
    torch.manual_seed(0)
    model = build(name).train()
    ids, mask = make_batch(name)
    y = torch.tensor([0, 1, 2])
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    losses = []
    for _ in range(40):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(ids, mask).logits, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses[::8]


@pytest.mark.parametrize("name", textcls.list_models())
def test_config_defaults_are_the_papers_and_small_preset_exists(name):
    entry = get_entry(name)
    assert "small" in entry.presets
    cfg = textcls.make_config(name)
    assert cfg.__class__ is entry.config_cls
    with pytest.raises(TypeError):
        textcls.make_config(name, not_a_field=1)


def test_all_six_registered():
    assert {"kim_cnn", "transformer", "act", "hcan", "agcnn", "lama"} <= set(textcls.list_models())


# ---------------------------------------------------------------- enrolment: configs without torch, classes bound

def test_the_configs_choices_are_what_the_layers_implement():
    from textcls.models.configs.base import ACTIVATION_NAMES
    from textcls.models.layers import ACTIVATIONS
    assert tuple(ACTIVATIONS) == ACTIVATION_NAMES


@pytest.mark.parametrize("name", textcls.list_models())
def test_every_declared_family_binds_its_class_in_the_module_it_names(name):
    entry = get_entry(name)
    assert entry.cls.registry_name == name and entry.cls.__module__ == entry.module
    if entry.module.startswith("textcls.models."):          # built in: declared by its torch-free config module
        assert entry.config_cls.__module__ == "textcls.models.configs." + entry.module.rsplit(".", 1)[1]


def test_a_class_binds_only_to_a_family_declared_for_its_module():
    from textcls.models.registration import _REGISTRY, declare_model, model_class

    class Config:
        pass

    try:
        entry = declare_model("declared_here", Config, module=__name__)
        with pytest.raises(ValueError, match="was not declared"):
            model_class("never_declared")(type("A", (), {"__module__": __name__}))
        with pytest.raises(ValueError, match="was not declared"):
            model_class("declared_here")(type("B", (), {"__module__": "elsewhere"}))
        with pytest.raises(LookupError, match="defines no class"):
            entry.cls                                   # this module is imported already and bound nothing
        cls = model_class("declared_here")(type("C", (), {"__module__": __name__}))
        assert entry.cls is cls and cls.registry_name == "declared_here"
        with pytest.raises(ValueError, match="registered twice"):
            model_class("declared_here")(type("D", (), {"__module__": __name__}))
        with pytest.raises(ValueError, match="registered twice"):
            declare_model("declared_here", Config, module=__name__)
    finally:
        _REGISTRY.pop("declared_here", None)
