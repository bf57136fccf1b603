"""Explanations of long texts with bounded memory (issue 55, item 1): every context-mixing method works through a
text's positions in chunks sized to the explanation's memory limit (textcls.runtime.limits: explain_max_memory_mb)
and gives the numbers the whole computation gives; DecompX, which must hold every position's part of every
position, refuses in one line a text whose parts alone exceed the limit; Occlusion / LIME / Shapley run fewer
perturbed copies per pass on long texts; `explain` says when it explained only the first words of a text.

The peak memory is measured in a child process (its resident-set peak, ru_maxrss, after a warm-up on a short
text) on a tiny random BERT whose position table was raised to 1,024, on a text of 600 words."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

from hf_toys import tiny_folder  # noqa: E402

import textcls  # noqa: E402
from textcls.cli import main  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
WORDS = "the film is a good movie but the plot is dull and the acting is not very fun , the story is really great".split()
LONG = " ".join((WORDS * 40)[:600])                    # 600 words, one piece each: 602 positions with [CLS]/[SEP]
SHORT = ["a good film , not bad at all", "the plot is dull", "this movie was really fun and the acting great"]
BOUND_MB = 128                                          # the limit the long text runs under
SLACK_MB = 96                                           # what the trace, its forward pass and the allocator add
CONTEXT_MIXING = ("norm", "globenc", "alti", "value_zeroing", "decompx")


def long_bert(root: Path) -> Path:
    """A tiny random BertForSequenceClassification (hidden 32, 2 layers, 4 heads) with 1,024 positions."""
    return tiny_folder(root, name="long-bert", positions=1024, tokenizer_max=1024)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return long_bert(tmp_path_factory.mktemp("long"))


_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[4])
import torch
torch.set_num_threads(1)
import textcls
from textcls.interpret.measures import explain_any
from textcls.interpret.sources import as_source
p = textcls.load_checkpoint(sys.argv[1])
src = as_source(p)
method = sys.argv[2]
kw = {"labels": p.labels} if method in ("occlusion", "lime") else {}
explain_any(p.model, src.instances(["a good film"]), method, **kw)          # warm-up: lazy imports, the allocator
(inst,) = src.instances([sys.argv[3]])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
try:
    a = explain_any(p.model, [inst], method, **kw)[0]
    out = {"weights": [float(x) for x in getattr(a, "scores", a)]}
except ValueError as e:
    out = {"error": str(e)}
out.update(n=inst.n, seconds=time.perf_counter() - t0,
           extra_mb=(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024)
print(json.dumps(out))
"""


def run_child(folder: Path, method: str, text: str, limit_mb: int) -> dict:
    env = {"TEXTCLS_EXPLAIN_MAX_MEMORY_MB": str(limit_mb), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    import os
    env.update({k: v for k, v in os.environ.items() if k.startswith("TEXTCLS_") and k not in env})
    r = subprocess.run([sys.executable, "-c", _CHILD, str(folder), method, text, str(REPO)], capture_output=True,
                       text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("method", CONTEXT_MIXING)
def test_a_long_text_stays_under_the_memory_limit(folder, method):
    """600 words on the encoder: each method's peak stays under the limit (128 MB here; before, value zeroing
    copied the attention weights of 256 zeroed copies at once, 1.5 GB, and DecompX held its whole (T, T, 64)
    feed-forward)."""
    got = run_child(folder, method, LONG, BOUND_MB)
    assert "error" not in got, got
    assert got["n"] == 600 and len(got["weights"]) == 600 and np.isfinite(got["weights"]).all()
    assert got["extra_mb"] <= BOUND_MB + SLACK_MB, got["extra_mb"]


def test_decompx_refuses_a_text_whose_parts_exceed_the_limit_in_one_line(folder, monkeypatch, capsys):
    got = run_child(folder, "decompx", LONG, 64)
    assert "error" in got and "\n" not in got["error"], got
    assert "explain_max_memory_mb" in got["error"] and "64 MB" in got["error"] and "positions" in got["error"]
    assert got["extra_mb"] < 64
    monkeypatch.setenv("TEXTCLS_EXPLAIN_MAX_MEMORY_MB", "64")
    assert main(["explain", str(folder), LONG, "--methods", "decompx", "--no-verdict"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "decompx" in err and "at most" in err, err


def _explain(p, texts, method) -> list[np.ndarray]:
    from textcls.interpret.context_mixing import explain_instances
    from textcls.interpret.sources import as_source
    return [np.asarray(a.scores) for a in explain_instances(p.model, as_source(p).instances(texts), method)]


@pytest.mark.parametrize("method", CONTEXT_MIXING)
@pytest.mark.parametrize("ckpt", ["long-bert", "transformer-sst2"])
def test_chunks_give_the_numbers_of_the_whole_computation(folder, method, ckpt, monkeypatch, shipped_predictors):
    """A limit of 1 MB makes every chunk one position (one zeroed copy); the default limit computes a short text
    in one piece. Same numbers."""
    p = textcls.load_checkpoint(folder) if ckpt == "long-bert" else shipped_predictors[ckpt]
    whole = _explain(p, SHORT, method)
    monkeypatch.setenv("TEXTCLS_EXPLAIN_MAX_MEMORY_MB", "1")
    for a, b in zip(whole, _explain(p, SHORT, method)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)


def test_value_zeroing_equals_zeroing_each_value_in_the_models_own_block(folder, monkeypatch):
    """The unchunked definition, one position at a time through trace.block_forward (the model's own block with
    a value zeroed), against the chunked computation over one set of attention weights."""
    import torch.nn.functional as F

    from textcls.interpret.context_mixing.trace import block_forward, pooled, rollout, row_normalise, trace
    from textcls.interpret.context_mixing.value_zeroing import value_zeroing
    from textcls.interpret.instances import stack
    from textcls.interpret.sources import as_source
    p = textcls.load_checkpoint(folder)
    ids, mask = stack(as_source(p).instances(SHORT))
    with torch.no_grad():
        t = trace(p.model, ids, mask)
        mats = []
        for layer, b in enumerate(t.blocks):
            x, out = t.inputs[layer], t.inputs[layer + 1]
            B, T, _ = x.shape
            c = torch.zeros(B, T, T, dtype=torch.float64)
            for j in range(T):
                zero = torch.zeros(B, T)
                zero[:, j] = 1
                y = block_forward(b, x, t.real, zero)
                c[:, :, j] = 1 - F.cosine_similarity(y.double(), out.double(), dim=-1)
            real = t.real.double()
            mats.append(row_normalise((c * real[:, None, :] * real[:, :, None]).clamp(min=0)))
        want = pooled(t, rollout(mats))
        monkeypatch.setenv("TEXTCLS_EXPLAIN_MAX_MEMORY_MB", "1")
        got = value_zeroing(t).double()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-7)


def test_decompx_batches_that_do_not_fit_together_are_split(folder, monkeypatch):
    """Texts explained together whose parts exceed the limit together (not alone) are explained in smaller
    batches, with the numbers each gets alone."""
    p = textcls.load_checkpoint(folder)
    texts = [" ".join((WORDS * 10)[:n]) for n in (150, 160, 170, 180)]
    alone = [_explain(p, [t], "decompx")[0] for t in texts]
    monkeypatch.setenv("TEXTCLS_EXPLAIN_MAX_MEMORY_MB", "16")            # one text of ~180 positions fits
    for a, b in zip(alone, _explain(p, texts, "decompx")):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("method", ["occlusion", "lime"])
def test_perturbation_methods_run_fewer_copies_per_pass_on_a_long_text(folder, method, monkeypatch):
    """Occlusion ran 64 perturbed copies per forward pass and LIME 32 whatever the length (MiniLM at 510 words:
    3.4 GB and 1.7 GB); the copies per pass now fit the limit."""
    from textcls.interpret.attributions import rows_per_pass
    from textcls.interpret.sources import as_source
    p = textcls.load_checkpoint(folder)
    (inst,) = as_source(p).instances([LONG])
    ids, mask = inst.batch()
    monkeypatch.setenv("TEXTCLS_EXPLAIN_MAX_MEMORY_MB", "64")
    rows = rows_per_pass(p.model, ids, mask, 64)
    assert 1 <= rows < 64
    assert rows * (16 * 4 * 602 ** 2 + 64 * 32 * 602) <= 64 * 2**20
    got = run_child(folder, method, LONG, 64)
    assert "error" not in got and got["extra_mb"] <= 64 + SLACK_MB, got


def test_the_limit_is_listed(capsys):
    assert main(["limits", "--json"]) == 0
    out = capsys.readouterr().out
    assert "explain_max_memory_mb" in out


def test_explain_says_when_it_explained_only_the_first_words(capsys):
    text = " ".join(["good", "film", "bad", "plot"] * 1250)                   # 5,000 words
    assert main(["explain", str(REPO / "checkpoints" / "transformer-sst2"), text, "--methods", "norm",
                 "--no-verdict", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["truncated"] is True and len(got["words"]) == 200
    assert "only the first 200 words" in got["note"] and "200 tokens" in got["note"]
    assert main(["explain", str(REPO / "checkpoints" / "transformer-sst2"), text, "--methods", "norm",
                 "--no-verdict"]) == 0
    assert "note: only the first 200 words of this text were explained" in capsys.readouterr().out
    assert main(["explain", str(REPO / "checkpoints" / "transformer-sst2"), "a good film", "--methods", "norm",
                 "--no-verdict", "--json"]) == 0
    short = json.loads(capsys.readouterr().out)
    assert short["truncated"] is False and "note" not in short
