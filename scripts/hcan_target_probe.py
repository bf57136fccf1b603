"""Why an HCAN / CAN checkpoint's target attention is (or is not) flat (issue 31):

    .venv/bin/python scripts/hcan_target_probe.py checkpoints/hcan-imdb [--n 400] [--data imdb] [--data-root DIR]

On n dev texts of the data set the checkpoint was trained on, prints one JSON object with
- the target vectors' norms and score scales;
- loss_vs_multiplier: the dev loss, accuracy and the word attention's median normalised entropy when every target
  score is multiplied by a in {0 (uniform weights), 0.5, 1 (the model), 2, 4, 8, 16}, at inference and with dropout on the target
  weights only (as in training): a loss that does not fall as a grows means nothing in training pushes the
  attention to be peaked, one that rises faster with dropout means dropout on the weights pushes it back;
- target_grad: over 16 seeded batches of 32 (train mode), the mean norm of dL/dT, the norm of its mean, and the
  median per-coordinate signal-to-noise |mean g| / rms g (1: the same gradient every batch; about 0.25: noise);
- init_entropy: the same model's word attention entropy with freshly initialised target attention under each
  target_init / target_scale choice (what a run starts from).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from textcls.checkpoint import load_checkpoint  # noqa: E402
from textcls.data.datasets import load_data  # noqa: E402
from textcls.models.hcan import TargetAttention  # noqa: E402


def word_entropies(beta: torch.Tensor) -> list[float]:
    """Normalised entropy of every (sentence, head) word distribution with >= 2 words; beta (..., W), rows sum to 1
    over real words and are 0 elsewhere (empty sentences: all 0)."""
    n = (beta > 0).sum(-1)                                                   # (...,) real words with weight
    h = -(beta.clamp_min(1e-12).log() * beta).sum(-1)                        # (...,)
    ok = n >= 2
    return (h[ok] / n[ok].float().log()).tolist()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--data", default=None, help="data set (default: the checkpoint's)")
    ap.add_argument("--data-root", default=None)
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    pred = load_checkpoint(args.checkpoint)
    model = pred.model.float().eval()
    data = args.data or json.loads((Path(args.checkpoint) / "config.json").read_text())["data"]["name"]
    dev = load_data(data, root=args.data_root, seed=0).splits["dev"].sample(args.n, seed=1)
    enc, ys = pred.encode(dev.texts), torch.tensor(dev.labels)
    pools = [m for m in model.modules() if isinstance(m, TargetAttention)]
    if not pools:
        print(f"{args.checkpoint}: no target attention (max-pool variant)", file=sys.stderr)
        return 1
    base = [p.score_scale for p in pools]
    mult = {"a": 1.0}
    for p, f in zip(pools, base):
        p.score_scale = (lambda f=f: f() * mult["a"])

    def run(a: float, target_dropout: bool, bs: int = 32) -> tuple[float, float, float]:
        mult["a"] = a
        for p in pools:
            p.dropout.train(target_dropout)
        torch.manual_seed(0)
        loss, ents, right = 0.0, [], 0
        with torch.no_grad():
            for i in range(0, len(ys), bs):
                e = enc.select(range(i, min(i + bs, len(ys))))
                out = model(e.token_ids, e.mask, return_maps=True)
                loss += F.cross_entropy(out.logits, ys[i:i + bs], reduction="sum").item()
                right += int((out.logits.argmax(-1) == ys[i:i + bs]).sum())
                ents += word_entropies(out.maps["beta"])
        for p in pools:
            p.dropout.eval()
        return loss / len(ys), float(np.median(ents)), right / len(ys)

    res = {"checkpoint": args.checkpoint, "n": len(ys), "target_dropout": pools[0].dropout.p,
           "target_init": model.config.target_init, "target_scale": model.config.target_scale,
           "scale": [round(float(f()), 4) for f in base],
           "target_norm": [round(float(p.target.detach().norm()), 4) for p in pools], "loss_vs_multiplier": []}
    for a in (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0):
        l0, e0, acc = run(a, False)
        l1, _, _ = run(a, True)
        res["loss_vs_multiplier"].append({"a": a, "loss": round(l0, 4), "loss_target_dropout": round(l1, 4),
                                          "accuracy": round(acc, 4), "word_entropy": round(e0, 3)})
    mult["a"] = 1.0
    model.train()
    grads: list[list[torch.Tensor]] = [[] for _ in pools]
    for k in range(16):
        idx = torch.randperm(len(ys), generator=torch.Generator().manual_seed(k))[:32]
        e = enc.select(idx.tolist())
        model.zero_grad()
        F.cross_entropy(model(e.token_ids, e.mask).logits, ys[idx]).backward()
        for i, p in enumerate(pools):
            grads[i].append(p.target.grad.detach().clone())
    model.eval()
    res["target_grad"] = []
    for g in grads:
        G = torch.stack(g)                                                   # (16, d)
        snr = G.mean(0).abs() / G.pow(2).mean(0).sqrt().clamp_min(1e-20)
        res["target_grad"].append({"grad_norm": round(float(G.norm(dim=1).mean()), 5),
                                   "mean_grad_norm": round(float(G.mean(0).norm()), 5),
                                   "snr_median": round(float(snr.median()), 3)})
    # what a run starts from: the trained model below, fresh target attention of each kind
    res["init_entropy"] = {}
    e = enc.select(range(min(64, len(ys))))
    for p, f in zip(pools, base):
        p.score_scale = f
    saved = [{k: v.clone() for k, v in p.state_dict().items()} for p in pools]
    for init, scale in (("normal", "head"), ("uniform", "learned"), ("uniform", "keras")):
        for i, p in enumerate(pools):
            fresh = TargetAttention(p.d, p.heads, p.key.kernel_size[0], p.value is not None, p.dropout.p,
                                    init, scale)
            p.target, p.scale, p.key = fresh.target, fresh.scale, fresh.key
        with torch.no_grad():
            beta = model(e.token_ids, e.mask, return_maps=True).maps["beta"]
        res["init_entropy"][f"{init}/{scale}"] = round(float(np.median(word_entropies(beta))), 3)
    for p, st in zip(pools, saved):
        p.target = torch.nn.Parameter(st["target"])
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
