"""Training-data attribution (TracIn, textcls.interpret.influence and the "influence" interpreter): captum's
identity-regression known answer, the fast variant against autograd and against captum's own TracInCP, the
random projection, mislabelled examples found by self-influence on a toy task with flipped labels, what training
saves and how a checkpoint folder checks it, and the command line's output and bad input."""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from textcls.checkpoint import CheckpointError, list_checkpoints, load_checkpoint
from textcls.cli import main
from textcls.data.batching import EncodedSplit
from textcls.interpret import influence as inf
from textcls.interpret import interpreters

REPO = Path(__file__).resolve().parents[1]
POS = ["good", "great", "fine", "nice", "superb", "lovely"]
NEG = ["bad", "awful", "poor", "dull", "weak", "ugly"]
FILLER = [f"w{i}" for i in range(40)]


def toy_folder(folder: Path, n_train: int = 200, flip: float = 0.1, seed: int = 0) -> set[int]:
    """A two-class toy data set (two cue words of the class among filler words) in the bundled format, with
    `flip` of the training labels flipped (seeded). Returns the flipped rows."""
    rng = random.Random(seed)

    def text(y: int) -> str:
        words = rng.sample(POS if y else NEG, 2) + rng.sample(FILLER, rng.randint(4, 8))
        rng.shuffle(words)
        return " ".join(words)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.json").write_text(json.dumps({"name": "toy", "task": "sentiment", "labels": ["neg", "pos"]}))
    flipped = set(rng.sample(range(n_train), int(n_train * flip)))
    for split, n in (("train", n_train), ("dev", 60), ("test", 60)):
        with open(folder / f"{split}.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["text", "label"])
            for i in range(n):
                y = i % 2
                w.writerow([text(y), ["neg", "pos"][1 - y if split == "train" and i in flipped else y]])
    return flipped


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """(checkpoint folder, flipped training rows): Kim CNN (small) trained by the pipeline on the toy data with
    10 % of its labels flipped, keeping the default snapshots."""
    from textcls.train.pipeline import train_from_spec
    root = tmp_path_factory.mktemp("influence")
    flipped = toy_folder(root / "data")
    torch.manual_seed(0)
    r = train_from_spec(str(root / "data"), "kim_cnn", preset="small", embeddings="random", epochs=8,
                        out=root / "ck", train_overrides=dict(batch_size=16, lr=0.01))
    return r.path, flipped


def tiny_run(kind: str, snapshots: str | None = None, n: int = 24):
    """A tiny Kim CNN trained 3 epochs on random token data with `fit`, keeping `kind` snapshots."""
    from textcls.models.registry import create_model
    from textcls.train.config import TrainConfig
    from textcls.train.fit import fit
    from textcls.train.snapshots import EpochSnapshots
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(2, 30, (n, 7), generator=gen)                              # (N, L)
    y = torch.arange(n) % 2                                                        # (N,)
    ids[y == 1, 0] = 3                                                             # a cue token for class 1
    enc = EncodedSplit.from_tensors(ids, y)
    torch.manual_seed(0)
    model = create_model("kim_cnn", vocab_size=30, num_labels=2, preset="small")
    kept = EpochSnapshots(model, snapshots or kind)
    cfg = TrainConfig(epochs=3, batch_size=8, lr=0.05, seed=0, device="cpu")
    hist = fit(model, enc, None, cfg, [kept])
    return model, enc, y, kept.snapshots(hist, cfg)


# ---------------------------------------------------------------- known answers


def test_identity_regression_each_training_point_is_its_own_top_proponent():
    """captum tests/influence/_core/test_tracin_regression.py::test_tracin_identity_regression: a linear model with
    positive coefficients (5 checkpoints, weights U(0, 100)), inputs the identity matrix, labels 0, MSE loss. Two
    different inputs have orthogonal gradients, so only self-influence is non-zero and positive: every training
    point is its own top proponent. The fast closed form and autograd give the same matrix."""
    d = 7
    x, y = torch.eye(d), torch.zeros(d, 1)                                         # (7, 7), (7, 1)
    gen = torch.Generator().manual_seed(0)
    weights = [torch.rand(1, d, generator=gen) * 100 for _ in range(5)]            # 5 x (1, 7)
    lrs = torch.ones(5)
    g = torch.stack([2 * (x @ w.T - y) for w in weights])                          # (E, N, 1): dMSE/dy, summed
    fast = inf.fast_scores(*[inf.Quantities(x[None], g, lrs, x)] * 2)              # (N, N)
    exact = torch.zeros(d, d)
    for w in weights:
        net = torch.nn.Linear(d, 1, bias=False)
        net.weight.data = w.clone()
        grads = torch.stack(list(inf.per_example_gradients(
            lambda i: F.mse_loss(net(x[i:i + 1]), y[i:i + 1], reduction="sum"), list(net.parameters()), d)))
        exact += grads @ grads.T
    torch.testing.assert_close(fast, exact, rtol=1e-5, atol=1e-3)
    assert torch.count_nonzero(fast - torch.diag(torch.diagonal(fast))) == 0 and (torch.diagonal(fast) > 0).all()
    for i in range(d):
        assert inf.top_k(fast[i], d)[0][0] == i
    torch.testing.assert_close(inf.fast_self_influence(inf.Quantities(x[None], g, lrs, x)), torch.diagonal(fast))


@pytest.mark.parametrize("kind", ["last", "full"])
def test_the_fast_variant_equals_last_layer_tracin_by_autograd(kind):
    """The closed form (g . g')(h . h' + 1) summed over epochs equals lr x the dot product of the output layer's
    per-example gradients computed by autograd through the model, for influence and self-influence, with the
    output layer's snapshots (features of the final model) and with full ones (each epoch's model)."""
    model, enc, y, snaps = tiny_run(kind)
    assert snaps.kind == kind and snaps.epochs == [1, 2, 3] and snaps.final_epoch == 3
    test, test_y = EncodedSplit.from_tensors(enc_ids(enc)[:5]), y[:5]
    q = inf.fast_quantities(model, snaps, enc, y)
    fast = inf.fast_scores(inf.fast_quantities(model, snaps, test, test_y), q)     # (5, N)
    exact, exact_self = inf.exact_influence(model, snaps, enc, y, test, test_y, params="last")
    torch.testing.assert_close(fast, exact, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(inf.fast_self_influence(q), exact_self, rtol=1e-4, atol=1e-6)
    assert fast.abs().max() > 1e-3                                                # not trivially zero
    cosine = inf.fast_scores(inf.fast_quantities(model, snaps, test, test_y), q, normalize=True)
    exact_cosine, _ = inf.exact_influence(model, snaps, enc, y, test, test_y, params="last", normalize=True)
    torch.testing.assert_close(cosine, exact_cosine, rtol=1e-4, atol=1e-6)
    assert cosine.abs().max() <= sum(snaps.lrs) + 1e-6 and not torch.allclose(cosine, fast)


@pytest.mark.parametrize("family", ["act", "agcnn", "can", "hcan", "kim_cnn", "lama", "transformer"])
def test_every_family_has_one_output_layer_the_fast_variant_reads(family):
    """Each model family's snapshots name its output layer, which sees one (B, D) input per forward pass, so the
    fast self-influence equals autograd's (3 classes, hierarchical input for HCAN)."""
    from textcls.models.registry import create_model
    from textcls.train.config import TrainConfig
    from textcls.train.fit import fit
    from textcls.train.snapshots import EpochSnapshots
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(2, 40, (12, 3, 6) if family == "hcan" else (12, 9), generator=gen)
    y = torch.arange(12) % 3
    enc = EncodedSplit.from_tensors(ids, y)
    model = create_model(family, vocab_size=40, num_labels=3, preset="small")
    kept, cfg = EpochSnapshots(model, "last"), TrainConfig(epochs=2, batch_size=6, seed=0, device="cpu")
    snaps = kept.snapshots(fit(model, enc, None, cfg, [kept]), cfg)
    fast = inf.fast_self_influence(inf.fast_quantities(model, snaps, enc, y))
    torch.testing.assert_close(fast, inf.exact_influence(model, snaps, enc, y)[1], rtol=1e-4, atol=1e-7)


def enc_ids(enc: EncodedSplit) -> torch.Tensor:
    return torch.stack(enc.ids)                                                   # (N, L): equal lengths here


def test_the_output_layer_scores_match_captum_tracincp():
    """captum.influence.TracInCP with layers=[the output layer], our checkpoints loaded by its
    checkpoints_load_func (which returns each epoch's learning rate), gives our scores."""
    from captum.influence import TracInCP
    model, enc, y, snaps = tiny_run("last")

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids, mask):
            return self.m(ids, mask).logits

    ids = enc_ids(enc)
    data = torch.utils.data.TensorDataset(ids, ids != 0, y)
    wrapped = Logits(model).eval()

    def load(net, path: str) -> float:
        i = snaps.epochs.index(int(Path(path).name))
        net.m.fc.load_state_dict(snaps.states[i])
        return snaps.lrs[i]
    tracin = TracInCP(wrapped, data, [str(e) for e in snaps.epochs], checkpoints_load_func=load, layers=["m.fc"],
                      loss_fn=torch.nn.CrossEntropyLoss(reduction="none"), batch_size=8)
    theirs = tracin.influence((ids[:4], ids[:4] != 0, y[:4]))                     # (4, N)
    ours = inf.fast_scores(inf.fast_quantities(model, snaps, EncodedSplit.from_tensors(ids[:4]), y[:4]),
                           inf.fast_quantities(model, snaps, enc, y))
    torch.testing.assert_close(ours, theirs.float(), rtol=1e-4, atol=1e-6)


def test_the_random_projection_is_seeded_and_close_to_the_whole_product():
    model, enc, y, snaps = tiny_run("last")
    whole = inf.fast_self_influence(inf.fast_quantities(model, snaps, enc, y))
    a, b = (inf.fast_self_influence(inf.fast_quantities(model, snaps, enc, y, projection=2048)) for _ in range(2))
    assert torch.equal(a, b)
    assert torch.corrcoef(torch.stack([whole, a]))[0, 1] > 0.95


def test_self_influence_finds_the_flipped_labels(toy):
    """Pruthi et al.'s mislabel experiment in small: 10 % of the toy training labels flipped; ranking the training
    examples by self-influence (the interpreter, from the saved checkpoint) finds them (ROC AUC > 0.8)."""
    from textcls.analysis.calibration import roc_auc
    path, flipped = toy
    rows = interpreters.run(load_checkpoint(path), "influence", {}, {"self": True, "top": 0}).to_dict()
    assert len(rows) == 200 and sorted(r["index"] for r in rows) == list(range(200))
    scores = [r["self_influence"] for r in rows]
    assert scores == sorted(scores, reverse=True)
    auc = roc_auc([int(r["index"] in flipped) for r in rows], scores)
    assert auc > 0.8, auc


# ---------------------------------------------------------------- what training keeps, what a folder accepts


def test_snapshots_leave_the_trained_weights_unchanged():
    with_, _, _, snaps = tiny_run("last")
    without, _, _, none = tiny_run("last", snapshots="off")
    assert none is None and snaps is not None
    for (k, a), b in zip(with_.state_dict().items(), without.state_dict().values()):
        assert torch.equal(a, b), k
    assert torch.equal(snaps.layer_state(len(snaps.epochs) - 1)["weight"], with_.fc.weight.detach())


def test_a_saved_checkpoint_keeps_its_epochs_and_a_bad_snapshot_file_is_refused(toy, tmp_path):
    import shutil

    from textcls.checkpoint.native import FILES
    from textcls.checkpoint.snapshots import SNAPSHOT_FILE
    path, _ = toy
    assert SNAPSHOT_FILE == inf.SNAPSHOT_FILE and SNAPSHOT_FILE in FILES
    snaps = inf.read_snapshots(path)
    p = load_checkpoint(path)
    best = json.loads((path / "config.json").read_text())["training"]["best_epoch"]
    # the epochs up to the one the checkpoint holds (the best of 8 here): those TracIn sums over
    assert snaps.kind == "last" and snaps.layer == "fc" and snaps.epochs == list(range(1, best + 1))
    assert snaps.final_epoch == best
    final = snaps.states[snaps.epochs.index(snaps.final_epoch)]
    assert torch.equal(final["weight"], p.model.fc.weight) and (path / SNAPSHOT_FILE).stat().st_size < 20_000
    bad = tmp_path / "bad"
    shutil.copytree(path, bad)
    tensors, meta = inf.pack_snapshots(snaps)
    from safetensors.torch import save_file
    cut = {k: (v[:, :-1].contiguous() if k.endswith("weight") else v) for k, v in tensors.items()}   # one feature less
    save_file(cut, str(bad / SNAPSHOT_FILE), metadata=meta)
    with pytest.raises(CheckpointError, match="tracin.safetensors: its tensors do not fit") as e:
        load_checkpoint(bad)
    assert "\n" not in str(e.value)
    (bad / SNAPSHOT_FILE).write_bytes(b"\x08" + b"\x00" * 7 + b"{}")
    info = list_checkpoints(tmp_path, include_invalid=True, deep=True)
    assert not info[0].valid and "safetensors" in info[0].error


# ---------------------------------------------------------------- the command line


def test_the_command_lists_proponents_opponents_and_self_influence(toy, capsys):
    path, _ = toy
    assert main(["influence", str(path), "good great w1 w2", "--top", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["predicted"] == out["label"] == "pos" and out["epochs"] and out["method"] == "fast"
    assert 0 < len(out["proponents"]) <= 3 and all({"text", "label", "score"} <= set(e) for e in out["proponents"])
    assert all(e["score"] > 0 for e in out["proponents"]) and all(e["score"] < 0 for e in out["opponents"])
    assert sum(e["label"] == "pos" for e in out["proponents"]) >= 2
    assert main(["influence", str(path), "--self", "--top", "5", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert isinstance(rows, list) and len(rows) == 5 and all({"text", "label", "self_influence"} <= set(r)
                                                               for r in rows)
    assert main(["influence", str(path), "good great w1 w2", "--method", "exact", "--top", "2"]) == 0
    assert "proponents" in capsys.readouterr().out
    assert main(["influence", str(path), "good great w1 w2", "--normalize", "--top", "3", "--json"]) == 0
    cosine = json.loads(capsys.readouterr().out)
    assert cosine["normalize"] and all(0 < e["score"] <= sum(cosine["lrs"]) for e in cosine["proponents"])


@pytest.mark.parametrize("args, says", [
    (["{shipped}", "a good film"], "--snapshots"),
    (["{toy}", ""], "the text is empty"),
    (["{toy}", "   "], "the text is empty"),
    (["{toy}"], "or --self"),
    (["{toy}", "good", "--label", "maybe"], "--label"),
    (["{toy}", "good", "--method", "exact", "--projection", "8"], "--projection"),
    (["{toy}", "--self", "--normalize"], "--normalize"),
])
def test_bad_input_exits_2_with_one_line(toy, capsys, args, says):
    args = [a.format(shipped=REPO / "checkpoints" / "kim_cnn-sst2", toy=toy[0]) for a in args]
    assert main(["influence", *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "Traceback" not in err


def test_the_final_checkpoint_alone_is_the_dot_product_of_the_two_loss_gradients(shipped_predictors):
    """--epochs final on a checkpoint trained without saved epochs: one term of TracIn's sum at learning rate 1,
    i.e. grad loss(train) . grad loss(test) over the output layer, checked by autograd for the top proponent and
    opponent; without the option the same checkpoint is refused in one line that says how to get the epochs."""
    import torch
    import torch.nn.functional as F
    from textcls.interpret import interpreters
    from textcls.models.layers import output_layer
    p = shipped_predictors["kim_cnn-sst2"]
    with pytest.raises(interpreters.InterpreterError, match="no saved epochs.*--epochs final"):
        interpreters.run(p, "influence", {"text": "the movie was not good"}, {})
    r = interpreters.run(p, "influence", {"text": "the movie was not good", "limit": 300},
                         {"epochs": "final", "top": 1})
    assert r.run.final_only and "final checkpoint alone" in r.run.over
    layer = output_layer(p.model)
    label = list(p.labels).index(r.label)

    def grads(text: str, y: int) -> torch.Tensor:
        enc = p.encode([text])
        p.model.zero_grad()
        loss = F.cross_entropy(p.model(enc.token_ids, enc.mask).logits, torch.tensor([y]))
        w, b = torch.autograd.grad(loss, [layer.weight, layer.bias])
        return torch.cat([w.reshape(-1), b])
    g_test = grads(r.text, label)
    for e in (r.proponents[0], r.opponents[0]):
        expected = float(grads(e.text, list(p.labels).index(e.label)) @ g_test)
        assert e.score == pytest.approx(expected, rel=1e-4, abs=1e-6)
