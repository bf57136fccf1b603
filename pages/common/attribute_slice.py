"""Attribute's "over a data set" panel: faithfulness of the chosen explanations over a whole split (or a slice
saved on Explore), batched across texts in the place the model lives (`work.slice_run`), with a progress bar, Stop
and Continue, and the table with bootstrap intervals. Its widgets keep Attribute's keys (attr_slice_*)."""
from __future__ import annotations

import streamlit as st

from pages.common import cache, work
from pages.common import widgets as w
from textcls.interpret import methods as M
from textcls.viz import explanations as F

LABELS = M.labels()


def slice_panel(names, by_name: dict, *, methods, baseline: str, steps: int, removal: str) -> None:
    """Faithfulness over a whole data split, batched across texts (textcls.interpret.batched): a progress bar,
    a Stop button (the run keeps what it has done and can go on), and the table with bootstrap intervals. `names`:
    the checkpoints of the page (their CheckpointInfo in `by_name`); the settings are the page's."""
    from textcls.data.datasets import list_datasets
    sets = list_datasets()
    if not sets:
        st.info("No bundled data set found (set TEXTCLS_DATA).")
        return
    with st.form("attr_slice"):
        c1, c2, c3, c4 = st.columns(4)
        s_ckpt = c1.selectbox("Checkpoint", list(names), key="attr_slice_ckpt",
                              persist_state="page")
        default = by_name[s_ckpt].data if by_name[s_ckpt].data in sets else sets[0]
        s_data = c2.selectbox("Data set", sets, index=sets.index(default), key="attr_slice_data",
                              persist_state="page")
        s_split = c3.selectbox("Split", ["test", "dev", "train"], key="attr_slice_split", persist_state="page")
        s_n = c4.number_input("Texts (0 = the whole split)", 0, 1_000_000, 0, step=50, key="attr_slice_n",
                              persist_state="page")
        from textcls.analysis import slices as sl
        saved = {f"{d} · {x.name}": (d, x) for d in sets for x in sl.load_slices(d)}
        s_from = st.selectbox("Texts from", ["the data set and split above"] + list(saved),
                              key="attr_slice_from", help="Or a slice saved on the Explore page (its data set and "
                              "split replace the ones chosen above).")
        go_slice = st.form_submit_button("Run", help="Batched across texts: the 1,821 sst2 test sentences take "
                                                     "minutes per model (more with integrated gradients or "
                                                     "occlusion, and on a busy machine); Stop keeps what is done.")
    if go_slice:
        try:
            if s_from in saved:
                s_data, chosen_slice = saved[s_from]
                bundle = cache.dataset(s_data, limit=None)
                split_name, texts = sl.slice_texts(chosen_slice, bundle, name=s_ckpt,
                                                   predict=lambda t: cache.predict(by_name[s_ckpt].path, t))
                where = f"{s_data}/{split_name} · slice {chosen_slice.name}"
                gold = None                                   # a slice's texts: no gold labels kept with them
            else:
                bundle = cache.dataset(s_data, limit=None)
                if s_split not in bundle.splits:
                    raise ValueError(f"{s_data} has no {s_split} split (has: {', '.join(bundle.splits)})")
                texts = list(bundle.splits[s_split].texts)
                gold = (list(bundle.splits[s_split].labels), list(bundle.labels))   # for plausibility
                where = f"{s_data}/{s_split}"
            texts = texts[:int(s_n)] if s_n else texts
            gold = (gold[0][:len(texts)], gold[1]) if gold is not None else None
            run = work.slice_run(by_name[s_ckpt].path, texts, removal=removal, baseline=baseline, steps=steps,
                                  methods=[m for m in methods if m != "leave_one_out"] + ["random"])
            st.session_state["attr_slice_job"] = (s_ckpt, where, run, gold)
        except Exception as e:  # noqa: BLE001
            st.error(f"Could not score the data set: {type(e).__name__}: {w.md_escape(e)}")
    if "attr_slice_job" not in st.session_state:
        return
    s_ckpt, where, run, gold = st.session_state["attr_slice_job"]
    if not run.finished and not run.stop_requested:
        st.button("Stop", key="attr_slice_stop", on_click=run.stop, icon=":material/stop:",
                  help="Stops after the batch of texts under way; the table shows the texts done.")
        bar = st.progress(run.done / max(run.total, 1), text="Starting…")

        def progress(done: int, total: int) -> None:
            bar.progress(done / max(total, 1), text=f"{w.md_escape(s_ckpt)} on {w.md_escape(where)}: "
                                                    f"{done:,} / {total:,} texts")
        try:
            run.run(progress)
        except Exception as e:  # noqa: BLE001
            st.error(f"Could not score the data set: {type(e).__name__}: {w.md_escape(e)}")
            return
        bar.empty()
    try:
        rep, extra, extra_notes = run.report(*(gold or (None, None)))     # with plausibility and seconds per text
    except Exception as e:  # noqa: BLE001 - the worker restarted since (the run is gone): one line
        st.error(f"Could not report the data-set run: {type(e).__name__}: {w.md_escape(e)}")
        return
    for r in rep.rows:
        r.update(extra.get(r["method"], {}))
    if not run.finished:
        st.warning(f"Stopped after {run.done:,} of {run.total:,} texts: the table covers those.")
        st.button("Continue", key="attr_slice_continue", on_click=run.resume, icon=":material/play_arrow:")
    st.caption(f"{w.md_escape(s_ckpt)} on {rep.settings['n_texts']:,} texts of {w.md_escape(where)} in "
               f"{rep.seconds:.1f} s; reference = leave-one-out; erasure random fraction to flip: "
               f"{rep.settings['random_orders']} random order(s) a text, averaged over the texts. Brackets: bootstrap "
               "95% interval over texts.")
    table, tests = F.slice_report_tables(rep.rows, rep.model_row, LABELS)
    st.dataframe(table, hide_index=True, width="stretch")
    if tests is not None:
        st.caption("The model's own attention, permuted and made uniform (Jain & Wallace): how far the output moves.")
        st.dataframe(tests, hide_index=True, width="stretch")
    for note in list(rep.settings["notes"]) + extra_notes:
        st.caption(w.md_escape(note))

