"""fit(): determinism, stopping, divergence, early stopping, optimisers, extra loss, clipping; train_from_spec;
and a short real training per model on SST-2 (dev accuracy clearly above chance)."""
import json
import math
import threading
import time

import pytest
import torch

import textcls
from textcls.models.registry import get_entry
from textcls.data.batching import EncodedSplit, encode_split, make_batches
from textcls.train.pipeline import train_from_spec
from textcls.records import EpochEvent, StepEvent
from textcls.train.config import TrainConfig
from textcls.train.fit import fit, noam_factor


def toy_split(n=96, seed=0):
    """Random token ids 3..29 of length 3..10; label 1 iff the text contains an id below 8 (learnable)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.zeros(n, 10, dtype=torch.long)
    labels = []
    for i in range(n):
        length = int(torch.randint(3, 11, (1,), generator=g))
        ids[i, :length] = torch.randint(3, 30, (length,), generator=g)
        labels.append(int((ids[i, :length] < 8).any()))
    return EncodedSplit.from_tensors(ids, labels)


TRAIN, DEV = toy_split(96, 0), toy_split(48, 1)


def kim(seed=0):
    torch.manual_seed(seed)
    return textcls.create_model("kim_cnn", vocab_size=30, num_labels=2, preset="small")


def state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def same_state(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


def test_same_seed_gives_the_same_loss_sequence(monkeypatch):
    # the same seed and the same thread count: `batch=auto` picks 1 or 2 threads by the machine's load, and the
    # two summation orders differ in the last float bits (seen: 0.7406769 vs 0.7406770 with another suite beside)
    monkeypatch.setenv("TEXTCLS_THREADS", "batch=1")
    cfg = TrainConfig(epochs=2, batch_size=16, seed=3, device="cpu")
    h1 = fit(kim(), TRAIN, DEV, cfg)
    h2 = fit(kim(), TRAIN, DEV, cfg)
    assert len(h1.step_losses) == 12 and h1.step_losses == h2.step_losses
    assert [e.dev_accuracy for e in h1.epochs] == [e.dev_accuracy for e in h2.epochs]
    h3 = fit(kim(), TRAIN, DEV, TrainConfig(epochs=2, batch_size=16, seed=4, device="cpu"))
    assert h3.step_losses != h1.step_losses


def test_events_and_history():
    events = []
    h = fit(kim(), TRAIN, DEV, TrainConfig(epochs=2, batch_size=32, device="cpu"), callbacks=[events.append])
    steps = [e for e in events if isinstance(e, StepEvent)]
    epochs = [e for e in events if isinstance(e, EpochEvent)]
    assert [s.step for s in steps] == list(range(1, 7)) and all(s.total_steps == 6 for s in steps)
    assert [s.epoch for s in steps] == [1, 1, 1, 2, 2, 2]
    assert [e.epoch for e in epochs] == [1, 2] and epochs[-1].dev is not None
    assert set(epochs[-1].dev) == {"accuracy", "loss", "macro_f1"}
    assert all(s.elapsed <= t.elapsed for s, t in zip(steps[:3], epochs[:1]))
    assert h.steps == 6 and len(h.epochs) == 2 and h.stopped_reason == "completed 2 epoch(s)"
    assert h.best_dev_accuracy == max(e.dev_accuracy for e in h.epochs)
    json.dumps(h.to_dict())  # plain data


def test_stop_event_stops_cleanly():
    stop = threading.Event()

    def stopper(e):
        if isinstance(e, StepEvent) and e.step == 3:
            stop.set()
    model = kim()
    h = fit(model, TRAIN, DEV, TrainConfig(epochs=5, batch_size=8, device="cpu"), [stopper], stop)
    assert h.steps == 3 and h.stopped_by_user and "stopped by user" in h.stopped_reason
    assert h.epochs == [] and not model.training


def _nan_after(model, n_calls):
    """Make the model's training-mode logits NaN from its n-th training forward on."""
    orig, calls = model.forward, [0]

    def forward(*a, **k):
        out = orig(*a, **k)
        if model.training:
            calls[0] += 1
            if calls[0] >= n_calls:
                out.logits = out.logits * float("nan")
        return out
    model.forward = forward


def test_nan_loss_stops_and_keeps_the_best_dev_weights():
    model = kim()
    _nan_after(model, 8)                       # batch 16: 6 steps per epoch; NaN in epoch 2
    snaps = {}
    h = fit(model, TRAIN, DEV, TrainConfig(epochs=4, batch_size=16, device="cpu"),
            [lambda e: isinstance(e, EpochEvent) and snaps.setdefault(e.epoch, state(model))])
    assert h.diverged and "non-finite training loss" in h.stopped_reason and "epoch 2, step 8" in h.stopped_reason
    assert len(h.epochs) == 1 and h.steps == 7 and all(math.isfinite(x) for x in h.step_losses)
    assert same_state(state(model), snaps[1])


def test_nan_loss_without_dev_goes_back_to_the_initial_weights():
    model = kim()
    initial = state(model)
    _nan_after(model, 3)
    h = fit(model, TRAIN, None, TrainConfig(epochs=2, batch_size=16, device="cpu"))
    assert h.diverged and h.steps == 2 and same_state(state(model), initial)


def test_huge_learning_rate_diverges_with_a_clear_message():
    h = fit(kim(), TRAIN, DEV, TrainConfig(epochs=30, batch_size=16, lr=1e30, optimizer="sgd", device="cpu"))
    assert h.diverged and "non-finite" in h.stopped_reason


def test_early_stopping_and_restoring_the_best_epoch():
    # a learning rate this small changes nothing: no dev improvement after epoch 1 -> stop after 1 + patience
    h = fit(kim(), TRAIN, DEV, TrainConfig(epochs=10, batch_size=32, lr=1e-12, patience=2, device="cpu"))
    assert len(h.epochs) == 3 and h.best_epoch == 1 and h.stopped_reason.startswith("early stopping at epoch 3")
    # the final weights are those of the last epoch that improved dev accuracy
    model, snaps = kim(), {}

    def snap(e):
        if isinstance(e, EpochEvent) and e.improved:
            snaps["best"] = (e.epoch, state(model))
    h = fit(model, TRAIN, DEV, TrainConfig(epochs=6, batch_size=16, lr=0.02, device="cpu"), [snap])
    assert snaps["best"][0] == h.best_epoch and same_state(state(model), snaps["best"][1])


def test_sgd_learning_rate_decay_after_epochs_without_improvement():
    cfg = TrainConfig(epochs=5, batch_size=32, lr=1e-12, optimizer="sgd", lr_decay=0.5, lr_decay_patience=2,
                      device="cpu")
    h = fit(kim(), TRAIN, DEV, cfg)
    assert [e.lr / 1e-12 for e in h.epochs] == pytest.approx([1, 1, 0.5, 0.5, 0.25])


def test_noam_warmup_schedule():
    lrs = []
    fit(kim(), TRAIN, None, TrainConfig(epochs=1, batch_size=8, lr=0.01, optimizer="noam", warmup_steps=4,
                                        device="cpu"), [lambda e: isinstance(e, StepEvent) and lrs.append(e.lr)])
    expected = [0.01 * min(k / 4, math.sqrt(4 / k)) for k in range(1, 13)]
    assert lrs == pytest.approx(expected) and max(lrs) == pytest.approx(0.01) and lrs.index(max(lrs)) == 3
    assert noam_factor(1, 10) == pytest.approx(0.1) and noam_factor(40, 10) == pytest.approx(0.5)


def test_extra_loss_is_added():
    base = fit(kim(), TRAIN, None, TrainConfig(epochs=1, batch_size=16, device="cpu")).step_losses
    model = kim()
    model.extra_loss = lambda out, labels: torch.tensor(5.0)   # constant: same gradients, loss + 5
    extra = fit(model, TRAIN, None, TrainConfig(epochs=1, batch_size=16, device="cpu")).step_losses
    assert extra == pytest.approx([x + 5.0 for x in base], abs=1e-5)


def test_gradient_clipping_bounds_the_update():
    def update_norm(clip):
        model = kim()
        before = state(model)
        fit(model, TRAIN, None, TrainConfig(epochs=1, batch_size=32, lr=1.0, optimizer="sgd", momentum=0.0,
                                            clip_norm=clip, max_steps=1, device="cpu"))
        after = state(model)
        return math.sqrt(sum(float(((after[k] - before[k]).float() ** 2).sum()) for k in before))
    assert update_norm(None) > 0.05
    assert update_norm(0.01) == pytest.approx(0.01, rel=1e-3)


def test_max_norm_bounds_each_class_weight_vector_and_adadelta_learns():
    from textcls.train.fit import output_layer
    model = kim()
    h = fit(model, TRAIN, None, TrainConfig(epochs=3, batch_size=16, lr=50.0, optimizer="sgd", momentum=0.0,
                                            max_norm=0.5, device="cpu"))
    w = output_layer(model).weight                                      # (C, F)
    assert w.shape[0] == 2 and w.norm(dim=1).max() <= 0.5 + 1e-5
    free = kim()
    fit(free, TRAIN, None, TrainConfig(epochs=3, batch_size=16, lr=50.0, optimizer="sgd", momentum=0.0,
                                       device="cpu"))
    assert output_layer(free).weight.norm(dim=1).max() > 0.6          # without the constraint it grows
    h = fit(kim(), TRAIN, None, TrainConfig(epochs=8, batch_size=16, lr=1.0, optimizer="adadelta", device="cpu"))
    first, last = sum(h.step_losses[:6]) / 6, sum(h.step_losses[-6:]) / 6
    assert last < first
    with pytest.raises(ValueError, match="max_norm"):
        TrainConfig(max_norm=0)


def test_max_steps_and_bucketing():
    h = fit(kim(), TRAIN, DEV, TrainConfig(epochs=5, batch_size=16, max_steps=8, device="cpu"))
    assert h.steps == 8 and len(h.epochs) == 2 and "max_steps=8" in h.stopped_reason
    assert h.epochs[-1].dev_accuracy is not None       # the partial last epoch is evaluated
    lengths = [i % 17 for i in range(500)]
    batches = make_batches(lengths, 10, torch.Generator().manual_seed(0))
    assert sorted(i for b in batches for i in b) == list(range(500))
    spread = sum(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches) / len(batches)
    assert spread <= 1.0                                    # buckets: each batch of similar lengths
    assert batches != make_batches(lengths, 10, torch.Generator().manual_seed(1))


def test_bad_inputs():
    with pytest.raises(ValueError, match="optimizer"):
        TrainConfig(optimizer="rmsprop")
    with pytest.raises(ValueError, match="lr"):
        TrainConfig(lr=0)
    bad = EncodedSplit.from_tensors(torch.tensor([[3, 4]]), [5])
    with pytest.raises(ValueError, match="label index 5"):
        fit(kim(), bad, None, TrainConfig(epochs=1, device="cpu"))
    with pytest.raises(ValueError, match="labels"):
        EncodedSplit.from_tensors(torch.tensor([[3, 4]]), [0, 1])


# ---------------------------------------------------------------- with real data


def test_train_from_spec_writes_a_checkpoint_with_test_metrics(tmp_path, bundled_data):
    from textcls.checkpoint import list_checkpoints, load_checkpoint
    r = train_from_spec("sst2", "act", preset="small", embeddings="random", epochs=1, data_root=bundled_data,
                        limit=120, out=tmp_path / "act_sst2", seed=1)
    assert r.path == tmp_path / "act_sst2" and set(r.metrics) == {"dev", "test"}
    pred = load_checkpoint(r.path)
    info = pred.info
    assert info["data"]["name"] == "sst2" and info["data"]["splits"] == {"train": 120, "dev": 120, "test": 120}
    assert info["metrics"]["test_accuracy"] == r.metrics["test"]["accuracy"]
    assert info["tokenizer"]["max_len"] == 64           # capped at the small ACT's position table
    assert info["training"]["epochs"] == 1 and info["embeddings"]["source"] == "random"
    [ck] = list_checkpoints(tmp_path)
    assert ck.model == "act" and ck.test_accuracy == r.metrics["test"]["accuracy"]
    assert len(pred.predict(["word " * 500])[0].tokens) == 64


def test_extra_vocab_adds_glove_words_that_keep_their_vectors(bundled_data):
    from textcls.data.embeddings import glove_index, glove_vectors
    plain = train_from_spec("trec", "kim_cnn", preset="small", epochs=1, data_root=bundled_data, limit=60, seed=0)
    r = train_from_spec("trec", "kim_cnn", preset="small", epochs=1, data_root=bundled_data, limit=60, seed=0,
                        extra_vocab=2000)
    itos = r.tokenizer.vocab.itos
    assert itos[: len(plain.tokenizer.vocab)] == plain.tokenizer.vocab.itos   # training words keep their ids
    added = itos[len(plain.tokenizer.vocab):]
    assert 0 < len(added) <= 2000 and len(set(itos)) == len(itos)
    words, vectors = glove_vectors()
    assert set(added) <= set(words[:2000])
    emb = r.model.embed.weight if hasattr(r.model.embed, "weight") else next(r.model.embed.parameters())
    for w in added[:20]:                                       # never in training: no gradient, GloVe vector kept
        assert torch.allclose(emb[itos.index(w)].float(), torch.tensor(vectors[glove_index()[w]]), atol=1e-6)
    with pytest.raises(ValueError, match="GloVe"):
        train_from_spec("trec", "kim_cnn", preset="small", embeddings="random", epochs=1, data_root=bundled_data,
                        limit=20, extra_vocab=10)


def test_train_from_spec_refuses_a_foreign_out_folder_before_training(tmp_path):
    from textcls.checkpoint import CheckpointError
    (tmp_path / "mine.txt").write_text("x")
    with pytest.raises(CheckpointError, match="not a textcls checkpoint"):
        train_from_spec("no-such-data-is-loaded", "kim_cnn", out=tmp_path)


STEPS = 300


@pytest.fixture(scope="module")
def sst2(bundled_data):
    """SST-2 encoded once for all models (flat and sentence-split), with a GloVe matrix for the vocabulary."""
    from textcls.data.datasets import load_data
    from textcls.data.embeddings import build_embedding_matrix
    from textcls.data.text import Tokenizer, TokenizerConfig
    bundle = load_data("sst2", root=bundled_data)
    flat = Tokenizer.build(bundle.splits["train"].texts, TokenizerConfig(max_len=64), max_size=6000)
    hier = Tokenizer(TokenizerConfig(hierarchical=True), flat.vocab)
    matrix, coverage = build_embedding_matrix(flat.vocab, "glove")
    assert coverage > 0.9
    enc = {kind: (encode_split(tok, bundle.splits["train"]), encode_split(tok, bundle.splits["dev"]))
           for kind, tok in (("tokens", flat), ("sentences", hier))}
    return enc, matrix, len(flat.vocab)


@pytest.mark.parametrize("name", textcls.list_models())
def test_a_few_hundred_steps_lift_dev_accuracy_above_chance(sst2, name):
    enc, matrix, vocab_size = sst2
    train, dev = enc[get_entry(name).input_kind]
    torch.manual_seed(0)
    model = textcls.create_model(name, vocab_size=vocab_size, num_labels=2, preset="small", embeddings=matrix)
    t0 = time.perf_counter()
    h = fit(model, train, dev, TrainConfig(epochs=2, batch_size=32, lr=3e-3, max_steps=STEPS, device="cpu"))
    seconds = time.perf_counter() - t0
    print(f"\n{name}: {STEPS} steps in {seconds:.1f} s, dev accuracy per epoch "
          f"{[round(e.dev_accuracy, 3) for e in h.epochs]}")
    assert h.steps == STEPS and not h.diverged
    assert h.best_dev_accuracy > 0.6, h.epochs


def test_a_nan_loss_never_reaches_the_optimiser():
    """The loss is checked before its backward pass and the optimiser step: the step that would have used the
    NaN is never taken, so the weights are exactly those of the steps before it (no dev, no completed epoch:
    the initial weights, which also stay untouched in between)."""
    model = kim()
    initial = state(model)
    _nan_after(model, 3)
    stepped = []

    def sgd(params, config):
        opt = torch.optim.SGD(params, lr=config.lr)
        plain = opt.step

        def step(*a, **k):
            stepped.append(all(torch.isfinite(p.grad).all() for p in params if p.grad is not None))
            return plain(*a, **k)
        opt.step = step
        return opt
    h = fit(model, TRAIN, None, TrainConfig(epochs=2, batch_size=16, device="cpu"), optimizer=sgd)
    assert h.diverged and h.steps == 2 and stepped == [True, True]
    assert same_state(state(model), initial)


def test_fault_injection_is_a_callback():
    from textcls.train.faults import FailAt, InjectedFailure, from_env
    steps = []
    with pytest.raises(InjectedFailure, match="before step 3"):
        fit(kim(), TRAIN, None, TrainConfig(epochs=1, batch_size=16, device="cpu"),
            [lambda e: isinstance(e, StepEvent) and steps.append(e.step), FailAt(3)])
    assert steps == [1, 2]
    h = fit(kim(), TRAIN, None, TrainConfig(epochs=1, batch_size=16, device="cpu"), [FailAt(3, rank=1)])
    assert h.steps == 6                                      # another rank's fault: this single process trains on
    assert from_env({}) == []
    (f,) = from_env({"TEXTCLS_FAIL_RANK": "1", "TEXTCLS_FAIL_STEP": "3", "TEXTCLS_FAIL_MODE": "kill"})
    assert (f.step, f.rank, f.mode) == (3, 1, "kill")


def test_fractional_epochs_frozen_parameters_and_the_linear_schedule():
    from textcls.train.fit import linear_schedule
    model = kim()
    frozen = dict(model.named_parameters())
    name = next(iter(frozen))
    before = frozen[name].detach().clone()
    lrs = []
    h = fit(model, TRAIN, DEV, TrainConfig(epochs=0.5, batch_size=16, lr=0.1, device="cpu", frozen=(name,)),
            [lambda e: isinstance(e, StepEvent) and lrs.append(e.lr)], schedule=linear_schedule(0.34))
    assert h.steps == 3 and len(h.epochs) == 1 and h.epochs[0].dev_accuracy is not None   # half of 6 steps
    assert h.stopped_reason == "completed 3 steps (0.5 epochs)"
    assert torch.equal(dict(model.named_parameters())[name], before)
    assert lrs == pytest.approx([0.1, 0.1 * 2 / 2, 0.1 * 1 / 2])      # warm-up of 1 step, then linear decay
    with pytest.raises(ValueError, match="no parameter 'nope'"):
        fit(kim(), TRAIN, None, TrainConfig(epochs=1, device="cpu", frozen=("nope",)))
    with pytest.raises(ValueError, match="epochs must be a number > 0"):
        TrainConfig(epochs=0)
