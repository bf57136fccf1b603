"""Train: pick data, a model and its hyper-parameters, and train it in the background with live curves. The
model is a textcls family trained from scratch, or a pretrained Hugging Face encoder fine-tuned with a fresh head
(`model="hf:..."`, textcls.train.hf: an installed base, a save_pretrained folder or a hub id).

The run is a `textcls.train.jobs` job (a worker thread, never this script's thread); this session keeps only
the job ids (st.session_state["train_jobs"]), and a fragment polls the job's state every 2 seconds while it runs.
When a run ends its checkpoint is in the checkpoint folder and the cached listing is refreshed, so it shows on
every page at once. The forms, the checks before a run and the runs panel are pages.common.train_parts.
"""
from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

import textcls
from pages.common import cache, inside_app, widgets as w
from pages.common import train_parts as tp
from pages.common.train_parts import GLOVE, RANDOM
from textcls.data import datasets as tdata
from textcls.data.hub import hub_offline_reason
from textcls.train import hf as hf_train
from textcls.train.forms import config_fields
from textcls.runtime.limits import current as current_limits

inside_app(__file__)

JOBS_KEY = "train_jobs"            # this session's job ids, oldest first
SEEN_KEY = "train_jobs_seen"       # finished jobs whose checkpoint has been announced to the other pages
HUB_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?(:[A-Za-z0-9_.-]+)?$")

st.title("Train a model")
st.caption("Choose a data set, a model and its hyper-parameters (the paper's values, or a preset), then watch the "
           "loss and dev accuracy while it trains. Training runs in the background: you can use the other pages "
           "meanwhile, and the checkpoint appears on them as soon as it is saved.")

JOB_TABLE = cache.job_registry()
jobs: list[str] = st.session_state.setdefault(JOBS_KEY, [])
seen: set = st.session_state.setdefault(SEEN_KEY, set())
# the user's folder: training never writes into the repository
trainer = tp.Trainer(JOB_TABLE, jobs, w.session_id(), cache.user_checkpoints(), current_limits())


def unique_name(model: str, data: str) -> str:
    """The name the CLI would give (`runtime.paths.run_name`: MODEL-DATA, then -2, -3, ...), also skipping the
    names of runs still training on this server (their folders appear only when they are saved)."""
    from textcls.runtime.paths import run_name
    busy = {Path(str(x.spec.get("out"))).name for x in map(JOB_TABLE.snapshot, JOB_TABLE.running()) if x is not None}
    return run_name(model, data, taken=lambda n: n in busy or any((r / n).exists() for r in cache.checkpoint_roots()))


# ---------------------------------------------------------------- 1. data

st.subheader("1 · Data")
source = st.radio("Source", ["Bundled data set", "Upload a file", "Hugging Face hub"], horizontal=True,
                  key="tr_source")
data_arg = None            # what the job loads: a bundled name, "hf:ID", or a loaded DataBundle
data_name = ""
data_kw: dict = {}
limit = st.columns([1, 3])[0].number_input("Rows per split (0 = all)", min_value=0, max_value=10_000_000, value=0,
                                          step=100, key="tr_limit",
                                          help="A seeded random sample of each split, for quick runs.")
limit = int(limit) or None

if source == "Bundled data set":
    names = tdata.list_datasets()
    if not names:
        st.warning("No bundled data set found in "
                   f"{w.md_escape(', '.join(map(str, tdata.data_roots())))} (set TEXTCLS\\_DATA).")
    else:
        name = st.selectbox("Data set", names, index=names.index("sst2") if "sst2" in names else 0, key="tr_data")
        try:
            bundle = cache.dataset(name)
        except (tdata.DataError, ValueError) as e:
            st.error(f"This data set cannot be read: {tp.say(e, 600)}")
        else:
            tp.bundle_summary(bundle, limit)
            data_arg, data_name = name, name
elif source == "Upload a file":
    bundle = w.labelled_file("tr", "it is split 80/10/10 into train/dev/test")
    if bundle is not None:
        try:
            tdata.check_trainable(bundle)
        except tdata.DataError as e:
            st.error(tp.say(e, 400), icon=":material/error:")
        else:
            tp.bundle_summary(bundle, limit)
            if limit:
                bundle = tdata.DataBundle(bundle.name, list(bundle.labels),
                                          {k: s.sample(limit, 0) for k, s in bundle.splits.items()},
                                          bundle.task, bundle.source, dict(bundle.meta))
            data_arg, data_name = bundle, bundle.name
else:
    why = hub_offline_reason()
    if why:
        st.warning(f"The Hugging Face hub is switched off on this server ({w.md_escape(why)}): a hub data set "
                   "cannot be downloaded here. Use a bundled data set or upload a file.")
    hub_id = st.text_input("Hub data set id", placeholder="e.g. stanfordnlp/sst2, ag_news, or ID:CONFIG",
                           key="tr_hub").strip()
    c1, c2 = st.columns(2)
    hub_text = c1.text_input("Text column", value="text", key="tr_hub_text").strip() or "text"
    hub_label = c2.text_input("Label column", value="label", key="tr_hub_label").strip() or "label"
    if hub_id:
        if not HUB_RE.match(hub_id.removeprefix("hf:")):
            st.error("A hub id looks like owner/name or name (letters, digits, \\_ . -), optionally :config.")
        else:
            data_arg = "hf:" + hub_id.removeprefix("hf:")
            data_name = hub_id.removeprefix("hf:").split(":")[0].split("/")[-1]
            data_kw = {"text_column": hub_text, "label_column": hub_label}
            st.caption("It is downloaded when training starts (the run fails with a message within seconds if "
                       "the hub cannot be reached).")

data = tp.DataChoice(data_arg, data_name, data_kw, limit)

# ---------------------------------------------------------------- 2. model

st.subheader("2 · Model")
SCRATCH, PRETRAINED = "A textcls model, trained from scratch", "A pretrained Hugging Face encoder, fine-tuned"
kind = st.radio("Kind of model", [SCRATCH, PRETRAINED], horizontal=True, key="tr_kind",
                help="textcls models are small and train in minutes; a pretrained encoder (BERT-like) keeps its "
                     "layers, gets a fresh classification head for this data set's labels and is fine-tuned whole.")
if kind == PRETRAINED:
    hf_spec, hf_error = tp.hf_encoder()
    hf_short = hf_train.display_name(hf_spec)[3:] if hf_spec else "hf"
    tp.hf_form(trainer, data, hf_spec, hf_error, unique_name(hf_short, data_name or "data"))
else:
    models = textcls.list_models()
    c1, c2, c3 = st.columns(3)
    model = c1.selectbox("Model", models, index=models.index("kim_cnn") if "kim_cnn" in models else 0, key="tr_model")
    entry = textcls.get_entry(model)
    preset_opts = ["paper defaults"] + list(entry.presets)
    preset_label = c2.selectbox("Preset", preset_opts, key=f"tr_preset_{model}",
                                index=preset_opts.index("small") if "small" in preset_opts else 0,
                                help="The config defaults are the paper's; a preset overrides some of them "
                                     "(\"small\": a laptop-sized model that trains in a minute or two).")
    preset = None if preset_label == "paper defaults" else preset_label
    variant_label = c3.selectbox("Variant", ["none"] + list(entry.variants), key=f"tr_variant_{model}",
                                 help="The paper's variants and ablations (config switches).")
    variant = None if variant_label == "none" else variant_label
    if entry.description:
        st.caption(w.md_escape(entry.description))
    doc = (entry.config_cls.__doc__ or "").strip()
    if doc and not doc.startswith(entry.config_cls.__name__ + "("):
        st.caption(w.md_escape(doc.splitlines()[0]))
    base_cfg = textcls.make_config(model, preset=preset, variant=variant)

    e1, e2 = st.columns(2)
    emb = e1.radio("Word vectors", [GLOVE, RANDOM], horizontal=True, key="tr_emb",
                   help="GloVe 6B 50-d (sets the embedding size to 50), or random vectors of the model's size.")
    modes = ["non-static", "static", "multichannel"] if emb == GLOVE else ["rand"]
    cfg_mode = getattr(base_cfg, "embedding_mode", "non-static")
    mode = e2.selectbox("Embeddings during training", modes, key=f"tr_mode_{emb}_{model}_{variant}",
                        index=modes.index(cfg_mode) if cfg_mode in modes else 0,
                        help="static: frozen; non-static: fine-tuned; multichannel: one frozen and one fine-tuned "
                             "copy; rand: random vectors, trained.")
    extra_vocab = 0
    if emb == GLOVE:
        extra_vocab = int(e1.number_input(
            "Extra GloVe words in the vocabulary", min_value=0, max_value=400_000, value=30_000, step=10_000,
            key="tr_extra_vocab",
            help="The most frequent GloVe words that the training texts lack join the vocabulary with their GloVe "
                 "vectors, so words unseen in training are not all unknown later. 30,000 was best on dev in our "
                 "tuning (docs/tuning.md); each 10,000 words add about 1 MB to the checkpoint. 0 = training words "
                 "only."))

    # ---------------------------------------------------------------- 3. hyper-parameters and training settings
    choice = tp.ModelChoice(model, preset, preset_label, variant, base_cfg, emb, mode, extra_vocab,
                            config_fields(model, preset, variant))
    tp.scratch_form(trainer, data, choice,
                    unique_name("-".join(x for x in (model, preset, variant) if x), data_name or "data"))

# ---------------------------------------------------------------- 4. runs

st.subheader("3 · Runs")
tp.others_table(trainer)
live_jobs = [j for j in jobs if JOB_TABLE.get(j) is not None]
if not live_jobs:
    st.info("No run yet in this session. Set things up above and press "
            f"**{'Start fine-tuning' if kind == PRETRAINED else 'Start training'}**.",
            icon=":material/model_training:")
    st.stop()
polling = any(JOB_TABLE.get(j).is_alive() for j in live_jobs)
st.fragment(tp.runs, run_every=tp.POLL_SECONDS if polling else None)(trainer, live_jobs, seen, polling)
