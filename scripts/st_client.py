"""A Streamlit session without a browser, for `scripts/bench_crowd.py --clients socket`: what the server does for a
class whose browsers run on the students' own machines.

It speaks Streamlit's own protocol over the app's websocket (`/_stcore/stream`, the `websockets` package that
Streamlit itself depends on; the messages are Streamlit's protobufs, `streamlit.proto`): it asks for a page as a
browser does (a `rerun_script` back message naming the page), reads the widgets' ids from the elements the run
sends, and submits a form by sending the text area's value with the form's submit button triggered. Nothing is
drawn: an action's time is from the message sent until the server's `script_finished` of that run, which is when
a browser would have every element of the answer.
"""
from __future__ import annotations

import asyncio
import html
import re
import time

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg


def text_of(body: str) -> str:
    """An HTML element's text as a browser's textContent reads it, its runs of white space made one space."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", body)).split())


class SocketUser:
    """One Streamlit session over a websocket: `open(stem)`, `compare(text)` (the seconds until the run that answers
    it is over), `close()`. `answered` is the same time (no browser draws here), for `bench_crowd.Log`."""

    def __init__(self, url: str, timeout: float):
        self.url, self.timeout = url, timeout
        self.widgets: dict[str, str] = {}          # label (the form's submitter: "submit <label>") -> widget id
        self.page_hash = ""
        self.answered = float("nan")

    async def open(self, stem: str) -> None:
        self.stem = stem
        self.ws = await websockets.connect(self.url.replace("http://", "ws://") + "/_stcore/stream",
                                           subprotocols=["streamlit"], max_size=None, open_timeout=self.timeout)
        msg = BackMsg()
        msg.rerun_script.page_name = stem
        msg.rerun_script.context_info.url = f"{self.url}/{stem}"
        await self.run(msg)
        while True:                      # a run the page starts by itself (st.rerun) is over before the first action
            try:
                first = await asyncio.wait_for(self.ws.recv(), 0.5)
            except asyncio.TimeoutError:
                return
            fm = ForwardMsg()
            fm.ParseFromString(first)
            if fm.WhichOneof("type") == "new_session":
                await self.read(time.time(), None, fm)

    async def run(self, msg: BackMsg, mark: str | None = None) -> float:
        """Send one back message and read the forward messages until the run it starts is over: the seconds it
        took. `mark`: a text that one of the run's HTML elements must contain (this very answer)."""
        t = time.time()
        await self.ws.send(msg.SerializeToString())
        return await self.read(t, mark)

    async def read(self, t: float, mark: str | None, first: ForwardMsg | None = None) -> float:
        """Read forward messages (from `first`, already read) until a run that started after `t` (a new_session
        message opens each run) is over; one stopped for a rerun goes on to the next."""
        seen, started = mark is None, False
        while True:
            fm, first = first, None
            if fm is None:
                fm = ForwardMsg()
                fm.ParseFromString(await asyncio.wait_for(self.ws.recv(), self.timeout))
            kind = fm.WhichOneof("type")
            if kind == "new_session":
                started = True
            elif kind == "navigation" and fm.navigation.page_script_hash:
                self.page_hash = fm.navigation.page_script_hash         # the page this run drew (st.navigation)
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                el = fm.delta.new_element
                part = el.WhichOneof("type")
                if part == "text_area":
                    self.widgets[el.text_area.label] = el.text_area.id
                elif part == "button" and el.button.is_form_submitter:
                    self.widgets[f"submit {el.button.label}"] = el.button.id
                elif part == "html" and mark is not None and mark in text_of(el.html.body):
                    seen = True
                elif part == "exception":
                    raise RuntimeError(f"the page raised {el.exception.type}: {el.exception.message[:200]}")
            elif kind == "script_finished" and started:
                if fm.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    continue                                    # a rerun follows at once (st.rerun, a page switch)
                if not seen:
                    raise RuntimeError(f"the run ended without the answer ({mark!r} not in any HTML element)")
                return time.time() - t

    async def compare(self, text: str) -> float:
        """Submit `text` in Compare's "Sentence" form: seconds until the run that shows its answer is over."""
        self.answered = await self.run(self.submit("Sentence", text, "Compare"),
                                       mark=text.rsplit(",", 1)[-1].strip(" ."))
        return self.answered

    def submit(self, area: str, text: str, button: str) -> BackMsg:
        """The back message a browser sends when `text` is in the text area labelled `area` and the form's `button`
        is clicked."""
        msg = BackMsg()
        rs = msg.rerun_script
        rs.page_script_hash = self.page_hash
        rs.context_info.url = f"{self.url}/{self.stem}"
        value = rs.widget_states.widgets.add()
        value.id, value.string_value = self.widgets[area], text
        click = rs.widget_states.widgets.add()
        click.id, click.trigger_value = self.widgets[f"submit {button}"], True
        return msg

    async def shot(self, name: str) -> str:
        return "(no browser: no screenshot)"

    async def close(self) -> None:
        await self.ws.close()
