"""The hostile probes of issue 28, grouped as in the issue, run against a clone: every probe is a subprocess with a
virtual-memory cap and a timeout, so a bomb fails the probe, not the machine. Prints the table
"group / tries / failures / worst case" (Markdown).

    python scripts/reliability_probes.py [--repo PATH] [--only GROUP] [--json OUT] [--skip-dangerous]

--skip-dangerous leaves out the probes that, on a clone without the bounds, spawn 100,000 processes (`--workers`;
the memory cap is per process and root has no process limit): they are recorded as failures with the issue's
observation, for a "before" table.

A probe fails when the command does not do what a user needs: bad input must exit 2 with one line on stderr (no
traceback) within the timeout, a good run must exit 0, and what `list` calls usable must load.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
MEMORY_CAP = 2_500 * 2**20          # virtual memory of one probe (torch and a checkpoint need ~1.5 GB)
TIMEOUT = int(os.environ.get("PROBE_TIMEOUT", "180"))   # seconds; a loaded machine needs more


def _cap():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


class Probes:
    def __init__(self, repo: Path, work: Path, log: str | None = None):
        self.repo, self.work, self.rows, self.log = repo, work, [], log

    def run(self, args, env=None, stdin=None, timeout=TIMEOUT, python=None):
        cmd = [sys.executable, "-c", python] if python else [sys.executable, "-m", "textcls", *map(str, args)]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "TEXTCLS_HOME": str(self.work / "home"), **(env or {})}
        env.pop("TEXTCLS_CHECKPOINTS", None) if "TEXTCLS_CHECKPOINTS" not in (env or {}) else None
        t = time.perf_counter()
        try:
            r = subprocess.run(cmd, cwd=self.repo, env=env, input=stdin, capture_output=True, text=True,
                               timeout=timeout, preexec_fn=_cap)
            return r.returncode, r.stdout, r.stderr, time.perf_counter() - t
        except subprocess.TimeoutExpired:
            return None, "", "", time.perf_counter() - t

    def record(self, group, name, ok, why):
        self.rows.append({"group": group, "probe": name, "ok": bool(ok), "why": "" if ok else why})
        if self.log is not None:                               # one line per probe as it ends (partial runs)
            with open(self.log, "a") as f:
                f.write(json.dumps(self.rows[-1]) + "\n")
        print(f"{'ok  ' if ok else 'FAIL'} {group:<28} {name:<44} {'' if ok else why}", file=sys.stderr, flush=True)

    def bad_input(self, group, name, args, env=None, must_name=None, **kw):
        rc, out, err, s = self.run(args, env=env, **kw)
        lines = [x for x in err.splitlines() if x.strip()]
        if rc is None:
            why = f"no answer in {TIMEOUT} s"
        elif rc != 2:
            said = lines[-1] if lines else (out.strip().splitlines() or [""])[0]
            why = f"exit {rc}: {said[:140]}"
        elif len(lines) != 1 or "Traceback" in err:
            why = f"exit 2 but {len(lines)} lines on stderr"
        elif must_name and must_name not in err:
            why = f"exit 2 but the message does not name {must_name!r}: {lines[0][:120]}"
        else:
            why = ""
        self.record(group, name, not why, why)

    def works(self, group, name, args, check=None, env=None, **kw):
        rc, out, err, s = self.run(args, env=env, **kw)
        why = ""
        if rc is None:
            why = f"no answer in {TIMEOUT} s"
        elif rc != 0:
            why = f"exit {rc}: {(err.strip().splitlines() or [''])[-1][:140]}"
        elif check is not None:
            why = check(out, err) or ""
        self.record(group, name, not why, why)


def copy_ck(p: Probes, name: str, as_name: str) -> Path:
    dst = p.work / "cks" / as_name
    shutil.copytree(p.repo / "checkpoints" / name, dst)
    return dst


def rewrite(path: Path, fn):
    import torch  # noqa: F401
    from safetensors.torch import load_file, save_file
    st = load_file(str(path / "model.safetensors"))
    save_file({k: fn(v) for k, v in st.items()}, str(path / "model.safetensors"))


def header(path: Path, text: str):
    raw = text.encode()
    (path / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 64)


def usable_loads(p: Probes, group: str, folder: Path):
    """`list` on the folder's parent; the probe fails when list says valid and predict fails, or the reverse."""
    rc, out, err, _ = p.run(["list", "--checkpoints", folder.parent, "--json"])
    if rc != 0:
        p.record(group, f"{folder.name}: list", False, f"list exit {rc}")
        return
    valid = {c["name"]: c["valid"] for c in json.loads(out)["checkpoints"]}.get(folder.name)
    rc2, _, err2, _ = p.run(["predict", folder, "what is a probe ?"])
    if valid and rc2 != 0:
        p.record(group, folder.name, False, f"listed valid, predict exit {rc2}: {err2.strip()[-100:]}")
    elif not valid and rc2 == 0:
        p.record(group, folder.name, False, "listed invalid, but it loads")
    elif not valid and rc2 != 2:
        p.record(group, folder.name, False, f"listed invalid, predict exit {rc2} (not 2)")
    else:
        p.record(group, folder.name, True, "")


def print_table(rows) -> None:
    table = {}
    for r in rows:
        t = table.setdefault(r["group"], {"tries": 0, "failures": 0, "worst": ""})
        t["tries"] += 1
        if not r["ok"]:
            t["failures"] += 1
            t["worst"] = t["worst"] or f"{r['probe']}: {r['why']}"
    print("| group | tries | failures | worst case |\n|---|---:|---:|---|")
    for gname, t in table.items():
        print(f"| {gname} | {t['tries']} | {t['failures']} | {t['worst'][:150] or '-'} |")
    print(f"| all | {sum(t['tries'] for t in table.values())} | {sum(t['failures'] for t in table.values())} | |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", default=str(HERE), help="the clone to probe (default: this one)")
    ap.add_argument("--only", default=None, help="run only the groups whose name contains this")
    ap.add_argument("--json", default=None, help="also write every probe's result here")
    ap.add_argument("--jsonl", default=None, help="append each probe's result to this file as it ends")
    ap.add_argument("--skip-dangerous", action="store_true", help="do not run the process-bomb probes (see above)")
    ap.add_argument("--table", default=None, metavar="JSONL", help="only print the table of a --jsonl log")
    a = ap.parse_args()
    if a.table:
        print_table([json.loads(x) for x in Path(a.table).read_text().splitlines() if x.strip()])
        return
    work = Path(tempfile.mkdtemp(prefix="textcls-probes-"))
    p = Probes(Path(a.repo).resolve(), work, a.jsonl)
    (work / "cks").mkdir()
    kim = p.repo / "checkpoints" / "kim_cnn-trec"
    tiny = ["--epochs", 1, "--limit", 40, "--preset", "small", "--embeddings", "random", "--quiet"]
    groups = []

    def group(name):
        def deco(fn):
            groups.append((name, fn))
            return fn
        return deco

    @group("1 silent wrong answers: counts")
    def g1(g):
        for bs in ("-1", "-5", "0"):
            p.bad_input(g, f"evaluate --batch-size {bs}", ["evaluate", kim, "--batch-size", bs, "--limit", 50],
                        must_name="--batch-size")
        p.bad_input(g, "predict --batch-size -1", ["predict", kim, "a text", "--batch-size", "-1"])

    @group("2 folders that answer wrongly")
    def g2(g):
        d = copy_ck(p, "kim_cnn-trec", "dup_labels")
        cfg = json.loads((d / "config.json").read_text())
        cfg["labels"][1] = cfg["labels"][0]
        (d / "config.json").write_text(json.dumps(cfg))
        rc, out, err, _ = p.run(["list", "--checkpoints", d.parent, "--json"])
        valid = {c["name"]: c["valid"] for c in json.loads(out)["checkpoints"]}.get(d.name) if rc == 0 else None
        p.record(g, "duplicated label names listed invalid", valid is False, f"listed valid={valid}")
        import torch
        for name, dt in (("int64", torch.int64), ("bool", torch.bool), ("int32", torch.int32), ("uint8", torch.uint8)):
            d = copy_ck(p, "kim_cnn-trec", f"{name}_weights")
            rewrite(d, lambda v, dt=dt: v.to(dt))
            rc, out, err, _ = p.run(["list", "--checkpoints", d.parent, "--json"])
            valid = {c["name"]: c["valid"] for c in json.loads(out)["checkpoints"]}.get(d.name) if rc == 0 else None
            p.record(g, f"{name} weights listed invalid", valid is False, f"listed valid={valid}")
            shutil.rmtree(d)
        shutil.rmtree(p.work / "cks" / "dup_labels")

    @group("3 gzip bombs and rows")
    def g3(g):
        bomb = p.work / "bomb.csv.gz"
        with gzip.open(bomb, "wt", compresslevel=9) as f:
            f.write("text,label\n")
            for i in range(20_000):                          # 40 MB of CSV, tens of KB compressed
                f.write("what is " + "a" * 2000 + (",DESC\n" if i % 2 else ",ENTY\n"))
        env = {"TEXTCLS_MAX_FILE_MB": "5"}
        p.bad_input(g, "train on a 40 MB CSV in 0.1 MB of gzip (limit 5 MB)",
                    ["train", "--model", "kim_cnn", "--data", bomb, "--out", p.work / "o_bomb", *tiny], env=env)
        p.bad_input(g, "evaluate on the same", ["evaluate", kim, "--data", bomb], env=env)
        jb = p.work / "bomb.jsonl.gz"
        with gzip.open(jb, "wt", compresslevel=9) as f:
            for i in range(20_000):
                f.write(json.dumps({"text": "b" * 2000, "label": "xy"[i % 2]}) + "\n")
        p.bad_input(g, "train on a JSONL gzip bomb", ["train", "--model", "kim_cnn", "--data", jb, "--out",
                                                      p.work / "o_jb", *tiny], env=env)
        many = p.work / "many.csv"
        many.write_text("text,label\n" + "".join(f"w{i},{i % 2}\n" for i in range(5000)))
        p.bad_input(g, "5,000 rows with a 1,000-row limit", ["train", "--model", "kim_cnn", "--data", many,
                                                             "--out", p.work / "o_rows", *tiny],
                    env={"TEXTCLS_MAX_FILE_ROWS": "1000"})

    @group("4 special files in a checkpoint")
    def g4(g):
        for fname in ("history.json", "config.json", "vocab.json", "model.safetensors"):
            d = copy_ck(p, "kim_cnn-trec", f"fifo_{fname.split('.')[0]}")
            (d / fname).unlink()
            os.mkfifo(d / fname)
            usable_loads(p, g, d)
            if fname == "history.json":                      # what the Evaluate page's training curves read
                code = f"from textcls.checkpoint import load_history\nload_history({str(d)!r})"
                rc, _, err, _ = p.run([], python=code, timeout=30)
                p.record(g, "load_history of a FIFO", rc == 1 and "CheckpointError" in err,
                         "no answer in 30 s" if rc is None else f"exit {rc}: {err.strip()[-100:]}")
            shutil.rmtree(d)
        for target in ("/dev/zero", "/etc/hostname"):
            d = copy_ck(p, "kim_cnn-trec", f"link_{Path(target).name}")
            (d / "history.json").unlink()
            (d / "history.json").symlink_to(target)
            usable_loads(p, g, d)
            code = f"from textcls.checkpoint import load_history\nload_history({str(d)!r})"
            rc, _, err, s = p.run([], python=code, timeout=30)
            p.record(g, f"load_history through a symlink to {target}", rc == 1 and "CheckpointError" in err,
                     "no answer in 30 s" if rc is None else f"exit {rc}: {err.strip()[-100:]}")
            shutil.rmtree(d)
        for k, hist in enumerate(({"epochs": [1, 2]}, {"epochs": "x"}, {"epochs": [{"train_loss": "low"}]},
                                  {"best_epoch": "3"})):
            d = copy_ck(p, "kim_cnn-trec", f"history_{k}")
            (d / "history.json").write_text(json.dumps(hist))
            code = (f"from textcls.checkpoint import CheckpointError, load_history\ntry:\n    h = load_history({str(d)!r})"
                    f"\n    [e.get('train_loss') for e in h.epochs]\nexcept CheckpointError:\n    raise SystemExit(2)")
            rc, _, err, _ = p.run([], python=code, timeout=60)
            p.record(g, f"history.json {json.dumps(hist)[:40]}", rc == 2, f"exit {rc}: {err.strip()[-100:]}")
            shutil.rmtree(d)

    @group("5 count options")
    def g5(g):
        if a.skip_dangerous:
            p.record(g, "train --workers 100000", False, "not run: spawns 100,000 workers (issue 28: 4.8 GB in 5 s)")
        else:
            p.bad_input(g, "train --workers 100000", ["train", "--model", "kim_cnn", "--data", "trec", "--workers",
                                                      100000, "--out", p.work / "o_w", *tiny], must_name="--workers")
        for opt in ("--permutations", "--random-orders", "--steps"):
            p.bad_input(g, f"faithfulness {opt} 1000000000", ["faithfulness", kim, opt, 10**9, "--limit", 5,
                                                              "--quiet"], must_name=opt)
        if a.skip_dangerous:
            p.record(g, "train --arrow --num-proc 100000", False, "not run: may spawn 100,000 processes")
        else:
            p.bad_input(g, "train --arrow --num-proc 100000", ["train", "--model", "kim_cnn", "--data", "trec",
                                                               "--arrow", "--num-proc", 100000, "--out",
                                                               p.work / "o_np", *tiny])
        p.bad_input(g, "counterfactuals --examples -1", ["counterfactuals", kim, "--generator", "scrambler",
                                                         "--examples", -1, "--limit", 5])
        p.bad_input(g, "bench --seq-len 10**9", ["bench", "--seq-len", 10**9, "--quick"])

    @group("6 create_model and the parameter limit")
    def g6(g):
        code = ("import textcls\nfrom textcls.runtime.limits import LimitError\ntry:\n    textcls.create_model('kim_cnn', "
                "vocab_size=20000, num_labels=2, n_filters=2_000_000)\nexcept LimitError:\n    raise SystemExit(2)")
        rc, _, err, _ = p.run([], python=code)
        p.record(g, "create_model n_filters=2,000,000", rc == 2,
                 "no answer" if rc is None else f"exit {rc}: {(err.strip().splitlines() or [''])[-1][:100]}")

    @group("7 malformed safetensors headers")
    def g7(g):
        heads = {"string offsets": '{"fc.weight": {"dtype": "F32", "shape": [2, 2], "data_offsets": ["0", "16"]}}',
                 "list dtype": '{"fc.weight": {"dtype": ["F32"], "shape": [2, 2], "data_offsets": [0, 16]}}',
                 "Infinity shape": '{"fc.weight": {"dtype": "F32", "shape": [Infinity], "data_offsets": [0, 16]}}',
                 "100,000 nested brackets": "[" * 100_000 + "]" * 100_000}
        for k, (name, text) in enumerate(heads.items()):
            d = copy_ck(p, "kim_cnn-trec", f"header_{k}")
            header(d, text)
            p.bad_input(g, f"predict, {name}", ["predict", d, "a text"], must_name=str(d))
            p.bad_input(g, f"evaluate, {name}", ["evaluate", d, "--limit", 10], must_name=str(d))
            shutil.rmtree(d)

    @group("8 listed usable must load")
    def g8(g):
        import torch
        d = copy_ck(p, "kim_cnn-trec", "nan_dropout")
        cfg = json.loads((d / "config.json").read_text())
        cfg["model_config"]["dropout"] = float("nan")
        (d / "config.json").write_text(json.dumps(cfg))
        usable_loads(p, g, d)
        shutil.rmtree(d)
        for name, fn in (("nan_weights", lambda v: torch.full_like(v, float("nan"))),
                         ("inf_weights", lambda v: torch.full_like(v, float("inf")))):
            d = copy_ck(p, "kim_cnn-trec", name)
            rewrite(d, lambda v, fn=fn: fn(v) if v.is_floating_point() else v)
            usable_loads(p, g, d)
            shutil.rmtree(d)
        d = copy_ck(p, "kim_cnn-trec", "unknown_dtype")
        raw = (d / "model.safetensors").read_bytes()
        n = struct.unpack("<Q", raw[:8])[0]
        head = raw[8:8 + n].decode().replace('"F32"', '"Q32"', 1)
        (d / "model.safetensors").write_bytes(raw[:8] + head.encode() + raw[8 + n:])
        usable_loads(p, g, d)
        shutil.rmtree(d)

    @group("9 bad input exits 2, one line")
    def g9(g):
        base = ["train", "--model", "kim_cnn", "--data", "trec", "--out", p.work / "o9", *tiny]
        for extra in (["--max-vocab", 1], ["--min-freq", 0], ["--set", "n_filters=-1"], ["--set", "windows=[]"],
                      ["--set", "dropout=nan"], ["--set", "dropout=2"]):
            p.bad_input(g, "train " + " ".join(map(str, extra)), base + extra)
        p.bad_input(g, "predict --batch-size 0", ["predict", kim, "a text", "--batch-size", 0])
        deep = p.work / "deep.jsonl"
        deep.write_text('{"text": "a", "label": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
        p.bad_input(g, "deeply nested JSONL", ["train", "--model", "kim_cnn", "--data", deep, "--out",
                                               p.work / "o9b", *tiny])
        deepj = p.work / "deep.json"
        deepj.write_text("[" * 100_000 + "]" * 100_000)
        p.bad_input(g, "deeply nested JSON array", ["train", "--model", "kim_cnn", "--data", deepj, "--out",
                                                    p.work / "o9c", *tiny])
        code = ("import pyarrow as pa, pyarrow.parquet as pq\npq.write_table(pa.table({'text': pa.array([], pa.string())"
                f", 'label': pa.array([], pa.string())}}), {str(p.work / 'empty.parquet')!r})")
        p.run([], python=code)
        p.bad_input(g, "a Parquet file with no rows", ["train", "--model", "kim_cnn", "--data",
                                                       p.work / "empty.parquet", "--out", p.work / "o9d", *tiny])

    @group("10 control characters in text output")
    def g10(g):
        hostile = "what is \x1b[2J\x1b]0;pwned\x07 a bell\x00 ?"
        bad = lambda out, err: "raw control characters printed" if any(c in out for c in "\x1b\x07\x00") else None  # noqa
        p.works(g, "predict (text output)", ["predict", kim, hostile.replace("\x00", "")], check=bad)
        p.works(g, "predict from stdin", ["predict", kim, "-"], stdin=hostile + "\n", check=bad)
        f = p.work / "hostile.csv"
        f.write_text("text,label\n" + "".join(f'"{hostile} {i}",{i % 2}\n' for i in range(30)))
        p.works(g, "counterfactuals --examples", ["counterfactuals", kim, "--data", f, "--split", "train",
                                                  "--generator", "scrambler", "--examples", 5], check=bad)

    @group("11 relation generators")
    def g11(g):
        for ck in ("act-semeval2010", "transformer-semeval2010"):
            for gen in ("ablation_flip", "hotflip", "glove"):
                def check(out, err):
                    rep = json.loads(out)
                    return None if rep["n"] == rep["n_texts"] == 20 else f"{rep['n']} of {rep['n_texts']} edited"
                p.works(g, f"{gen} on {ck}", ["counterfactuals", p.repo / "checkpoints" / ck, "--data",
                                             "semeval2010", "--split", "test", "--generator", gen, "--limit", 20,
                                             "--json"], check=check, timeout=300)
            long = " ".join(["filler"] * 450) + " the <e1>burst</e1> was caused by water <e2>pressure</e2> ."
            short = "the <e1>burst</e1> was caused by water <e2>pressure</e2> ."

            def same(out, err):
                a, b = json.loads(out)
                return None if a["label"] == b["label"] else f"long text -> {a['label']}, short -> {b['label']}"
            p.works(g, f"a 460-token text on {ck}", ["predict", p.repo / "checkpoints" / ck, long, short, "--json"],
                    check=same)

    @group("12 overwrites")
    def g12(g):
        shipped = p.work / "shipped"
        shutil.copytree(kim, shipped / "kim_cnn-trec")
        before = (shipped / "kim_cnn-trec" / "model.safetensors").read_bytes()
        rc, _, err, _ = p.run(["train", "--model", "kim_cnn", "--data", "trec", "--out", shipped / "kim_cnn-trec",
                               *tiny], env={"TEXTCLS_CHECKPOINTS": str(shipped)})
        same = (shipped / "kim_cnn-trec" / "model.safetensors").read_bytes() == before
        p.record(g, "train --out into the shipped folder", rc == 2 and same, f"exit {rc}, replaced={not same}")
        out = p.work / "mine"
        p.run(["train", "--model", "kim_cnn", "--data", "trec", "--out", out, *tiny])
        first = (out / "config.json").read_text() if (out / "config.json").exists() else ""
        rc, _, _, _ = p.run(["train", "--model", "kim_cnn", "--data", "trec", "--out", out, "--seed", 1, *tiny])
        p.record(g, "train --out an existing checkpoint", rc == 2 and (out / "config.json").read_text() == first,
                 f"exit {rc}")
        race = p.work / "race"
        env = {**os.environ, "OMP_NUM_THREADS": "1", "TEXTCLS_HOME": str(p.work / "home")}
        cmd = [sys.executable, "-m", "textcls", "train", "--model", "kim_cnn", "--data", "trec", "--out", str(race),
               *map(str, tiny)]
        procs = [subprocess.Popen(cmd, cwd=p.repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, preexec_fn=_cap) for _ in range(2)]
        codes = sorted(pr.wait(timeout=300) for pr in procs)
        p.record(g, "two trainings with the same new --out", codes == [0, 2], f"exit codes {codes}")

    for name, fn in groups:
        if a.only and a.only not in name:
            continue
        fn(name)
    print_table(p.rows)
    if a.json:
        Path(a.json).write_text(json.dumps(p.rows, indent=1))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
