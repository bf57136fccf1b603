"""The Train page's longer pieces: this session's side of the training jobs (`Trainer`: a checkpoint name checked,
a run started once), the data set's summary, the pretrained encoder's choice and fine-tuning form, the textcls
model's hyper-parameter form and the runs panel that polls the jobs. They lay out what textcls.train (forms, hf,
jobs) provides; pages/train.py arranges them in its three steps."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from pages.common import cache, widgets as w, work
from textcls import viz
from textcls.checkpoint import HFError
from textcls.data.hub import hub_offline_reason
from textcls.runtime.limits import COUNTS, LimitError, check_parameters
from textcls.train import hf as hf_train
from textcls.train.config import OPTIMIZERS, PAPER_TRAINING, TrainConfig
from textcls.train.forms import changed_overrides, size_problems
from textcls.train.jobs import FINISHED, PROCESS_BASE_MB, JobError

MSG_LIMIT = 200    # characters of a message that echoes the user's input
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")
GLOVE, RANDOM = "GloVe 50d (pretrained)", "random"
POLL_SECONDS = 2.0   # how often a running job's panel is redrawn (each redraw costs the server and the browser)
STATUS_ICON = {"running": ":material/progress_activity:", "done": ":material/check_circle:",
               "stopped": ":material/stop_circle:", "failed": ":material/error:"}


def say(message: object, limit: int = MSG_LIMIT) -> str:
    """A message for st.error & co.: shortened (a long user value must not fill the page) and markdown/HTML-escaped."""
    return w.md_escape(viz.short(str(message), limit))


def _equal(a, b) -> bool:
    try:
        return a is b or bool(a == b)
    except Exception:  # noqa: BLE001 - values that do not compare (arrays) are taken as different
        return False


@dataclass
class DataChoice:
    """Step 1's answer: what the job loads (`arg`: a bundled name, "hf:ID", a loaded DataBundle, or None before a
    choice), its name for the checkpoint's, the hub's column names and the rows per split (None: all)."""
    arg: Any = None
    name: str = ""
    kw: dict | None = None
    limit: int | None = None

    def job_limit(self) -> int | None:
        """The sample size the job draws itself: a bundled or hub data set's; an upload is sampled already."""
        return self.limit if isinstance(self.arg, str) else None


@dataclass
class Trainer:
    """This session's side of the training jobs: the server's registry, this session's job ids (oldest first), its
    session id, the user's checkpoint folder and the server's limits."""
    registry: Any
    jobs: list[str]
    session: str
    root: Path
    limits: Any

    def target(self, name: str, replace: bool) -> tuple[Path | None, list[str]]:
        """(the checkpoint folder in the user's folder, or None for a bad name; what is wrong with it)."""
        out = self.root / name if NAME_RE.match(name or "") else None    # a bad name never reaches the disk
        if out is None:
            return None, ["The checkpoint name must start with a letter or digit and use only letters, digits, "
                          "_ . and - (at most 80 characters)."]
        if out.exists() and not replace:
            return out, [f"A checkpoint called {name} exists already: tick “Replace if it exists” or choose "
                         "another name."]
        return out, []

    def same_run(self, spec: dict) -> str | None:
        """The checkpoint name of this session's run that is still training with exactly these settings (all but
        the folder it writes), else None."""
        for j in self.jobs:
            job = self.registry.get(j)
            if job is None or not job.is_alive():
                continue
            if all(_equal(job.kwargs.get(k), v) for k, v in spec.items() if k != "out"):
                return Path(str(job.kwargs.get("out"))).name
        return None

    def submit(self, **spec) -> None:
        """Start a training job (textcls.train.jobs) for this session and make it the run shown below; a refusal
        (too many runs, the same folder being written, a run with the same settings still training in this session:
        Enter in a box and then the button gave two identical runs) is shown as one message."""
        twin = self.same_run(spec)
        if twin is not None:
            st.warning(f"A run with exactly these settings is already training ({say(twin)}, below), so no second "
                       "one was started. Change a setting to train another, or stop that run first.",
                       icon=":material/content_copy:")
            return
        try:
            jid = self.registry.submit(owner=self.session, **spec)
        except JobError as e:
            st.error(say(e), icon=":material/error:")
            return
        self.jobs.append(jid)
        st.session_state["train_current"] = jid


def bundle_summary(bundle, limit: int | None = None) -> None:
    s = bundle.summary()
    rows = [{"split": k, "rows": v["rows"], **({"used": min(v["rows"], limit)} if limit else {}), **v["labels"]}
            for k, v in s["splits"].items()]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="content")
    st.caption(f"{len(bundle.labels)} labels: {say(', '.join(bundle.labels[:12]))}"
               f"{' …' if len(bundle.labels) > 12 else ''}"
               + (f" · {w.md_escape(bundle.task)}" if bundle.task else "")
               + (f" · training uses a seeded sample of at most {limit:,} rows per split" if limit else ""))


# ---------------------------------------------------------------- a pretrained encoder, fine-tuned

HF_SOURCES = ["Installed base", "Folder on this machine", "Hub id"]


def hf_encoder() -> tuple[str, bool]:
    """The encoder to fine-tune: (what follows "hf:" in the run's model, "" before a choice; whether an error
    about it was shown), with what the check of it says (textcls.train.hf)."""
    hf_source = st.radio("Encoder", HF_SOURCES, horizontal=True, key="tr_hf_source")
    hf_spec, hf_error = "", False
    if hf_source == HF_SOURCES[0]:
        bases = hf_train.installed_bases()
        ready = {b["name"]: b for b in bases if b["installed"]}
        if ready:
            hf_spec = st.selectbox("Base", list(ready), key="tr_hf_base",
                                   format_func=lambda n: f"{n} ({ready[n]['upstream']})" if ready[n]["upstream"]
                                   else n)
        else:
            st.info("No pretrained base is installed on this server.", icon=":material/info:")
        for b in bases:
            if not b["installed"]:
                st.caption(f"{w.md_escape(b['name'])} is not installed; install it with `{b['install']}` and "
                           "restart the app.")
    elif hf_source == HF_SOURCES[1]:
        hf_spec = st.text_input("Folder", key="tr_hf_folder",
                                placeholder="/path/to/a/save_pretrained/folder",
                                help="A folder as save_pretrained writes it: config.json, model.safetensors "
                                     "(pickled weights are not loaded) and the tokenizer files; no custom code "
                                     "(trust_remote_code is refused).").strip()
    else:
        why = hub_offline_reason()
        if why:
            st.warning(f"The Hugging Face hub is switched off on this server ({w.md_escape(why)}): a hub model "
                       "cannot be downloaded here. Use an installed base or a folder.")
        hf_spec = st.text_input("Hub model id", key="tr_hf_hub", placeholder="e.g. distilbert-base-uncased or "
                                "owner/name").strip().removeprefix("hf:")
        st.caption("Works only when this server is online: the model is downloaded when the run starts "
                   "(safetensors weights only, no custom code).")
    if hf_spec:
        try:
            hf_info = hf_train.check_base("hf:" + hf_spec, expect="folder" if hf_source == HF_SOURCES[1] else None)
        except (HFError, OSError) as e:
            st.error(say(e, 400), icon=":material/error:")
            hf_error = True
        else:
            if hf_info["kind"] == "folder":
                hf_spec = hf_info["where"]
            if hf_info.get("parameters"):
                n = hf_info["parameters"]
                st.caption(f"{w.md_escape(hf_info['model_type'])} · {hf_info['layers']} layers · hidden size "
                           f"{hf_info['hidden']} · " + (f"{n / 1e6:.1f} M" if n >= 1e6 else f"{n:,}") + " parameters")
    return hf_spec, hf_error


def hf_form(t: Trainer, data: DataChoice, hf_spec: str, hf_error: bool, default_name: str) -> None:
    """The fine-tuning form (epochs, batch, learning rate, word pieces, seed, frozen embeddings, the checkpoint's
    name) and, when submitted, the run started or what is wrong with it."""
    with st.form("tr_hf_form", enter_to_submit=False):
        st.markdown("**Fine-tuning**")
        t1, t2, t3, t4 = st.columns(4)
        hf_epochs = t1.number_input("Epochs", min_value=hf_train.EPOCHS_MIN, max_value=float(COUNTS["epochs"][1]),
                                    value=0.5, step=0.5, format="%g", key="tr_hf_epochs",
                                    help="A fraction is a share of one epoch's steps (0.5: half the training "
                                         "texts, once).")
        hf_batch = t2.number_input("Batch size", min_value=COUNTS["batch_size"][0],
                                   max_value=COUNTS["batch_size"][1], value=hf_train.DEFAULTS["batch_size"],
                                   key="tr_hf_batch")
        hf_lr = t3.number_input("Learning rate", min_value=0.0, max_value=1.0, value=hf_train.DEFAULTS["lr"],
                                format="%g", step=None, key="tr_hf_lr",
                                help="The peak of the warm-up; small, or the pretrained weights are lost.")
        hf_max_len = t4.number_input("Max word pieces per text", min_value=hf_train.MIN_PIECES,
                                     max_value=COUNTS["max_len"][1], value=hf_train.DEFAULTS["max_len"],
                                     key="tr_hf_max_len", help="[CLS] and [SEP] included; longer texts are cut "
                                     "(at most the encoder's position table, 512 for BERT).")
        f1, f2 = st.columns([1, 3], vertical_alignment="bottom")
        hf_seed = f1.number_input("Seed", min_value=COUNTS["seed"][0], max_value=COUNTS["seed"][1], value=0,
                                  key="tr_hf_seed")
        hf_freeze = f2.checkbox("Freeze the word embeddings", value=hf_train.DEFAULTS["freeze_word_embeddings"],
                                key="tr_hf_freeze", help="The word-piece vectors keep their pretrained values "
                                "(faster; words missing from the small training set keep their meaning).")
        n1, n2 = st.columns([3, 1])
        hf_name = n1.text_input("Checkpoint name", value=default_name, key=f"tr_hf_name_{default_name}",
                                help=f"Saved as a folder in {t.root} (your folder; set TEXTCLS_HOME to move "
                                     "it).").strip()
        hf_replace = n2.checkbox("Replace if it exists", value=False, key="tr_hf_replace")
        st.caption("Recipe: AdamW (weight decay 0.01) with a linear warm-up over the first 6 % of the steps, then "
                   "a linear decay to 0; batches of texts of similar length; gradients clipped at norm 1. Far "
                   "slower per epoch than the small textcls models: all-MiniLM-L6-v2 takes about 3 min of one CPU "
                   f"thread for half an epoch of sst2. Limits on this server: {t.limits.job_threads} thread(s), "
                   f"{t.limits.job_max_seconds / 3600:g} h and about {t.limits.job_max_memory_mb + PROCESS_BASE_MB:,} "
                   f"MB of memory per run, {t.registry.max_running} runs at once (the parameter limit of the models "
                   "trained from scratch does not apply to a pretrained encoder). Larger runs: `python -m textcls "
                   "train --model hf:NAME`.")
        if not st.form_submit_button("Start fine-tuning", type="primary", icon=":material/play_arrow:"):
            return
    problems = []
    if data.arg is None:
        problems.append("Choose a data set first (step 1).")
    if not hf_spec and not hf_error:
        problems.append("Choose the encoder first (step 2).")
    over = {"lr": float(hf_lr), "batch_size": int(hf_batch), "max_len": int(hf_max_len),
            "freeze_word_embeddings": bool(hf_freeze)}
    problems += hf_train.settings_problems(float(hf_epochs), over)
    out, more = t.target(hf_name, hf_replace)
    problems += more
    if out is not None and hf_replace:
        try:
            hf_train.check_target(out)
        except HFError as e:
            problems.append(str(e))
    for p in problems:
        st.error(say(p), icon=":material/error:")
    if problems or hf_error:        # a refused encoder's error is shown above (step 2)
        return
    t.submit(data=data.arg, model="hf:" + hf_spec, epochs=float(hf_epochs), out=out, limit=data.job_limit(),
             train_overrides=over, seed=int(hf_seed), **(data.kw or {}))


# ---------------------------------------------------------------- a textcls model, trained from scratch

def field_inputs(fields, fkey: str, glove: bool) -> dict:
    """One widget per field of the model's config form (textcls.train.forms.config_fields), three columns; the
    values entered by name. With GloVe vectors the embedding size is fixed (50) and shown, not asked."""
    values: dict = {}
    cols = st.columns(3)
    for k, f in enumerate(fields):
        col = cols[k % 3]
        key = f"tr_f_{fkey}_{f.name}"
        helptext = (f.help + " · " if f.help else "") + f"paper: {f.paper}"
        if f.name == "embed_dim" and glove:
            col.text_input("embed_dim", value="50 (GloVe)", disabled=True, key=key + "_glove", help=helptext)
            continue
        if f.kind == "bool":
            values[f.name] = col.checkbox(f.name, value=bool(f.default), key=key, help=helptext)
        elif f.kind == "int":
            values[f.name] = col.number_input(f.name, value=int(f.default), step=1, key=key, help=helptext)
        elif f.kind == "float":
            values[f.name] = col.number_input(f.name, value=float(f.default), key=key, help=helptext,
                                              format="%g", step=None)
        elif f.choices:
            values[f.name] = col.selectbox(f.name, list(f.choices), index=list(f.choices).index(f.default)
                                           if f.default in f.choices else 0, key=key, help=helptext)
        elif f.kind in ("ints", "floats"):
            values[f.name] = col.text_input(f.name, value=", ".join(str(x) for x in f.default), key=key,
                                            help=helptext + " · comma-separated")
        elif f.kind == "str":
            values[f.name] = col.text_input(f.name, value=str(f.default), key=key, help=helptext)
    return values


@dataclass
class ModelChoice:
    """Step 2's answer for a textcls model: the family, its preset and variant (None: the paper's), the preset's
    label, the config they give, the word vectors (GLOVE or RANDOM), the embedding mode, the extra GloVe words
    and the config form's fields."""
    model: str
    preset: str | None
    preset_label: str
    variant: str | None
    base_cfg: Any
    emb: str
    mode: str
    extra_vocab: int
    fields: list


def scratch_form(t: Trainer, data: DataChoice, m: ModelChoice, default_name: str) -> None:
    """The model's hyper-parameters and the training settings in one form and, when submitted, the run started or
    what is wrong with it (a bad combination or a model over the size limit is found before the run: a parameter
    count on the meta device, by the model worker)."""
    glove = m.emb == GLOVE
    with st.form("tr_form", enter_to_submit=False):
        with st.expander(f"Model hyper-parameters ({len(m.fields)}) · {m.preset_label}"
                         f"{'' if m.variant is None else ', ' + m.variant}", expanded=False):
            st.caption("Defaults: the paper's values with the preset and variant applied; the paper's own value is in "
                       "each field's help.")
            values = field_inputs(m.fields, f"{m.model}_{m.preset}_{m.variant}", glove)

        st.markdown("**Training**")
        t1, t2, t3, t4 = st.columns(4)
        epochs = t1.number_input("Epochs", min_value=1, max_value=1000, value=5, key="tr_epochs")
        batch = t2.number_input("Batch size", min_value=1, max_value=4096, value=50, key="tr_batch")
        lr = t3.number_input("Learning rate", min_value=0.0, value=1e-3, format="%g", step=None, key="tr_lr")
        opt = t4.selectbox("Optimiser", OPTIMIZERS, key="tr_opt",
                           help="noam: Adam with warm-up then 1/sqrt(step) decay (the Transformer paper's); "
                                "adadelta: Kim (2014)'s (use learning rate 1.0).")
        t5, t6, t7 = st.columns([1, 1, 2])
        patience = t5.number_input("Early stopping patience (0 = off)", min_value=0, max_value=1000, value=0,
                                   key="tr_patience", help="Stop after this many epochs without a better dev accuracy.")
        seed = t6.number_input("Seed", min_value=0, max_value=2**31 - 1, value=0, key="tr_seed")
        paper = PAPER_TRAINING.get(m.model)
        use_paper = t7.checkbox("Use the paper's optimiser settings", value=False, key="tr_paper", disabled=not paper,
                                help="Replaces batch size / learning rate / optimiser with the paper's: "
                                     + (", ".join(f"{k}={v}" for k, v in paper.items()) if paper else "none known"))
        n1, n2 = st.columns([3, 1])
        out_name = n1.text_input("Checkpoint name", value=default_name, key=f"tr_name_{default_name}",
                                 help=f"Saved as a folder in {t.root} (your folder; set TEXTCLS_HOME to move "
                                      "it).").strip()
        replace = n2.checkbox("Replace if it exists", value=False, key="tr_replace")
        st.caption(f"Limits on this server: a model of at most {t.limits.max_parameters:,} parameters; about "
                   f"{t.limits.job_max_memory_mb:,} MB to train it (weights, optimiser and one batch of the longest "
                   f"texts, estimated before the first step); {t.limits.job_max_seconds / 3600:g} h per run; "
                   f"{t.registry.max_running} runs at once on this server. Larger runs: `python -m textcls train` "
                   "with --max-parameters / --max-train-memory-mb.")
        if not st.form_submit_button("Start training", type="primary", icon=":material/play_arrow:"):
            return

    problems = []
    if data.arg is None:
        problems.append("Choose a data set first (step 1).")
    problems.extend(size_problems(m.fields, values))
    try:
        overrides = changed_overrides(m.fields, values)
    except ValueError as e:
        problems.append(str(e))
        overrides = {}
    if getattr(m.base_cfg, "embedding_mode", None) != m.mode:
        overrides["embedding_mode"] = m.mode
    out, more = t.target(out_name, replace)
    problems += more
    train_over = {"patience": int(patience) or None}
    if not (use_paper and paper):
        train_over.update(batch_size=int(batch), lr=float(lr), optimizer=opt)
    try:
        TrainConfig(epochs=int(epochs), **train_over)
    except (ValueError, TypeError) as e:
        problems.append(f"Training settings: {e}")
    if not problems:
        # build the model on the meta device (shapes only, no memory) with an 8-word vocabulary, where the model
        # work runs (this process never imports torch with the worker on): a bad combination or a model over the
        # size limit is reported here and not in the run (which checks again, with the real vocabulary, and
        # estimates its training memory before the first step)
        probe_over = {k: v for k, v in overrides.items() if k != "embed_dim"} if glove else overrides
        try:
            n_params = work.parameter_count(m.model, m.preset, m.variant, {
                "vocab_size": 8, "num_labels": 2, **({"embed_dim": 50} if glove else {}), **probe_over})
        except Exception as e:  # noqa: BLE001 - any config error is the user's to fix
            problems.append(f"These settings do not make a valid {m.model}: {type(e).__name__}: {e}")
        else:
            try:
                check_parameters(n_params, t.limits, f"this {m.model} (before its vocabulary is counted)")
            except LimitError as e:
                problems.append(str(e).replace("on the command line (--max-parameters) or with env "
                                               "TEXTCLS_MAX_PARAMETERS", "only where the server is started"))
    if problems:
        for p in problems:
            st.error(say(p), icon=":material/error:")
        return
    t.submit(data=data.arg, model=m.model, preset=m.preset, variant=m.variant, overrides=overrides,
             embeddings="glove" if glove else "random", epochs=int(epochs), out=out, limit=data.job_limit(),
             train_overrides=train_over, paper_training=bool(use_paper and paper), seed=int(seed),
             extra_vocab=m.extra_vocab, **(data.kw or {}))


# ---------------------------------------------------------------- the runs

def fmt_s(sec: float) -> str:
    sec = int(round(sec))
    return f"{sec // 60} min {sec % 60:02d} s" if sec >= 60 else f"{sec} s"


def describe(s) -> str:
    sp = s.spec
    model = str(sp.get("model"))
    model = hf_train.display_name(model) if model.startswith("hf:") else model
    return f"{model} on {sp.get('data')} → {Path(str(sp.get('out'))).name}"


def others_table(t: Trainer) -> None:
    """The runs other sessions started on this server (only the session that started a run can stop it)."""
    others = [x for x in (t.registry.snapshot(j) for j in t.registry.running())
              if x is not None and x.id not in t.jobs]
    if not others:
        return
    st.caption(f"Also training on this server, started by other sessions ({len(others)} of at most "
               f"{t.registry.max_running} at once; only the session that started a run can stop it):")
    st.dataframe(pd.DataFrame([{"run": describe(x), "epoch": f"{min(x.epoch + 1, x.epochs)}/{x.epochs}",
                                "progress": x.fraction, "running for": fmt_s(x.wall_seconds)} for x in others]),
                 hide_index=True, width="stretch",
                 column_config={"progress": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0)})


def run_panel(t: Trainer, current: str, s) -> None:
    """One run: its status, progress and Stop button while it runs, its figures, curves and outcome."""
    with st.container(border=True):
        st.markdown(f"{STATUS_ICON.get(s.status, '')} **{say(describe(s))}** · {s.status}")
        if s.status == "running":
            left = s.seconds_left
            eta = "" if left is None else f" · about {fmt_s(left)} left"
            text = (f"{s.phase} · epoch {min(s.epoch + 1, s.epochs)}/{s.epochs} · "
                    f"step {s.step}/{s.total_steps or '?'}{eta}")
            st.progress(s.fraction, text=text)
            if st.button("Stop", key=f"tr_stop_{current}", icon=":material/stop:", disabled=s.stop_requested,
                         help="Ends the run before its next step and saves the best weights so far."):
                t.registry.stop(current, by=t.session)
                st.toast("Stopping: the run ends after its current step and saves the best weights so far.")
        m = st.columns(5)
        m[0].metric("Epochs done", f"{s.epoch}/{s.epochs}")
        m[1].metric("Step loss", "—" if s.loss is None else f"{s.loss:.4f}")
        m[2].metric("Dev accuracy", w.fmt_acc(s.dev_accuracy))
        m[3].metric("Best dev accuracy", w.fmt_acc(s.best_dev_accuracy),
                    help=None if s.best_epoch is None else f"epoch {s.best_epoch}")
        m[4].metric("Time", fmt_s(s.wall_seconds))
        item = viz.live_training_figure(s.step_events(), s.epoch_events(), title="Loss and accuracy")
        if s.status == "running" and not s.events:
            st.caption("Loading the data and the pretrained encoder: the curves start with the first step."
                       if str(s.spec.get("model", "")).startswith("hf:") else
                       "Loading the data, building the vocabulary and the model (and reading GloVe): the curves "
                       "start with the first step.")
        elif s.status in FINISHED:
            w.show_figure(item, f"train_{current}")
        else:
            st.plotly_chart(item.fig, theme=None, key=f"tr_live_{current}", width="stretch",
                            config=w.chart_config(f"train_{current}"))
        if s.status == "done":
            st.success(w.md_escape(s.message), icon=":material/check_circle:")
        elif s.status == "stopped":
            st.warning(w.md_escape(s.message), icon=":material/stop_circle:")
        elif s.status == "failed":
            st.error(f"{say(s.error, 600)}  \n{say(s.message, 600)}", icon=":material/error:")
            if s.traceback:
                with st.expander("Details"):
                    st.code(s.traceback, language="text")
        if s.metrics:
            st.dataframe(pd.DataFrame([{"split": k, **v} for k, v in s.metrics.items()]), hide_index=True,
                         width="content", column_config={
                             "accuracy": st.column_config.NumberColumn(format="percent"),
                             "macro_f1": st.column_config.NumberColumn("macro-F1", format="percent")})
        if s.path:
            st.caption(f"Checkpoint: {w.md_escape(s.path)}")
            l1, l2, l3 = st.columns(3)
            l1.page_link("pages/evaluate.py", label="Evaluate it", icon=":material/fact_check:")
            l2.page_link("pages/inspect.py", label="Inspect it", icon=":material/visibility:")
            l3.page_link("pages/compare.py", label="Compare it", icon=":material/compare_arrows:")


def runs(t: Trainer, live_jobs: list[str], seen: set, polling: bool) -> None:
    """This session's runs, newest first (one shown, a picker and a table when there are several), redrawn every
    POLL_SECONDS while one runs; a run that ended since the last look refreshes every page's checkpoint listing."""
    snaps = {j: t.registry.snapshot(j) for j in live_jobs}
    # a run that ended since the last look: its checkpoint is new on disk -> refresh every page's listing
    fresh = [j for j, s in snaps.items() if s.status in FINISHED and j not in seen]
    for j in fresh:
        seen.add(j)
    if fresh:
        cache.refresh_checkpoints()
        if polling:
            st.rerun()            # a full rerun: stops the polling once nothing runs
    order = list(reversed(live_jobs))
    current = st.session_state.get("train_current")
    if len(order) > 1:
        current = st.selectbox("Run", order, index=order.index(current) if current in order else 0,
                               key="tr_run_pick", format_func=lambda j: f"{describe(snaps[j])} · {snaps[j].status}")
    elif order:
        current = order[0]
    run_panel(t, current, snaps[current])
    if len(order) > 1:
        rows = [{"run": describe(x), "status": x.status, "epochs": f"{x.epoch}/{x.epochs}",
                 "best dev accuracy": x.best_dev_accuracy, "time (s)": round(x.wall_seconds, 1)}
                for x in (snaps[j] for j in order)]
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch",
                     column_config={"best dev accuracy": st.column_config.NumberColumn(format="percent")})
