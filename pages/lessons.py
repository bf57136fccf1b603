"""Lessons: guided lessons for a class, step by step (content and computation in `textcls.teach.lessons`).

The URL holds the lesson and the step (`?lesson=gates&step=2`), so a teacher can bookmark one; `presenter=1`
hides the sidebar and enlarges the type for a projector.
"""
from __future__ import annotations

import streamlit as st

from pages.common import inside_app, widgets as w, work
from textcls.teach import lessons

inside_app(__file__)

PRESENTER_CSS = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
header [data-testid="stToolbar"] {display: none !important;}
.stMainBlockContainer {max-width: 100% !important; padding-left: 3rem !important; padding-right: 3rem !important;}
.stMainBlockContainer p, .stMainBlockContainer li {font-size: 1.55rem !important; line-height: 1.45 !important;}
.stMainBlockContainer h1 {font-size: 3.2rem !important;}
.stMainBlockContainer h3 {font-size: 2.2rem !important;}
.st-key-lesson_figure [data-testid="stHtml"] {zoom: 1.6;}
.stMainBlockContainer [data-baseweb="select"] div {font-size: 1.3rem !important;}
</style>"""

# After Previous / Next the browser kept the scroll position at the buttons, so a projector showed the new step's
# chart and not its title or the text to read aloud. This script (a constant: no user text in it) scrolls the page
# to the top; the step in its comment makes it a new element, run once, each time the step changes.
SCROLL_TOP = """<script>/* step {step} */
for (const el of [document.querySelector('[data-testid="stMain"]'), document.scrollingElement, window]) {{
  if (el && el.scrollTo) el.scrollTo({{top: 0, behavior: "instant"}});
}}
</script>"""

lesson, idx = lessons.locate(st.query_params)
presenter = st.query_params.get("presenter") == "1"
n = len(lesson.steps)
by_id = {x.id: x for x in lessons.LESSONS}


def go_to(lesson_id: str, step: int, presenter_on: bool) -> None:
    """Write the step into the URL (the page reads it back on its rerun)."""
    params = lessons.step_params(by_id[lesson_id], step)
    if presenter_on:
        params["presenter"] = "1"
    st.query_params.from_dict(params)


def on_lesson() -> None:
    go_to(st.session_state["lesson_pick"], 0, presenter)


def on_presenter() -> None:
    go_to(lesson.id, idx, st.session_state["lesson_presenter"])


# the widgets follow the URL (a bookmark, Previous / Next)
st.session_state["lesson_pick"] = lesson.id
st.session_state["lesson_presenter"] = presenter
if presenter:
    st.html(PRESENTER_CSS)
st.html(SCROLL_TOP.format(step=f"{lesson.id}-{idx}"), unsafe_allow_javascript=True)

c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
c1.selectbox("Lesson", list(by_id), key="lesson_pick", on_change=on_lesson,
             format_func=lambda k: f"{lessons.LESSONS.index(by_id[k]) + 1}. {by_id[k].title}")
c2.toggle("Presenter", key="lesson_presenter", on_change=on_presenter,
          help="Larger type and no sidebar, for a projector; the link keeps it (presenter=1).")

step = lesson.steps[idx]
st.title(lesson.title)
st.caption(w.md_escape(lesson.goal) + "  \n" + " · ".join(
    f"**{k + 1}\\. {w.md_escape(s.title)}**" if k == idx else f"{k + 1}\\. {w.md_escape(s.title)}"
    for k, s in enumerate(lesson.steps)))
st.subheader(f"Step {idx + 1} of {n}: {step.title}")

with st.container(border=True):
    st.markdown(":material/record_voice_over: **To read aloud**")
    st.markdown(w.md_escape(step.read_aloud))

value = None
if step.slider is not None:
    s = step.slider
    value = st.slider(s.label, s.low, s.high, s.default, s.step, help=s.help, key=f"lesson_{lesson.id}_{idx}_slider")

with st.spinner("Running the models…"), w.or_one_line("This step"):
    result = work.lesson_step(lesson.id, idx, value)

if result.missing:
    st.warning(w.md_escape(result.missing), icon=":material/info:")
else:
    used = f" - read by {', '.join(result.used)}" if result.used else ""
    st.markdown(f"**Input**{w.md_escape(used)}: {w.md_escape(result.input)}")
    with st.container(key="lesson_figure"):
        for k, item in enumerate(result.figures):
            if presenter and item.html is None:
                item.fig = lessons.presenter_figure(item.fig)
            w.show_figure(item, f"lesson_{lesson.id}_{idx}_{k}", export=not presenter)
    if result.notes:
        st.markdown(":material/calculate: **Computed live on this input**\n\n"
                    + "\n".join(f"- {w.md_escape(x)}" for x in result.notes))

st.info(f"**Look for.** {w.md_escape(step.look_for)}", icon=":material/visibility:")
st.success(f"**Question for the class.** {w.md_escape(step.question)}", icon=":material/help:")

p, mid, nx = st.columns([1, 3, 1])
p.button("Previous", icon=":material/arrow_back:", disabled=idx == 0, key="lesson_prev", width="stretch",
         on_click=go_to, args=(lesson.id, idx - 1, presenter))
mid.markdown(f"<p style='text-align:center'>Step {idx + 1} of {n}</p>", unsafe_allow_html=True)
nx.button("Next", icon=":material/arrow_forward:", disabled=idx == n - 1, key="lesson_next", width="stretch",
          type="primary", on_click=go_to, args=(lesson.id, idx + 1, presenter))
