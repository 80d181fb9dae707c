"""A text field whose editing keys take effect in the order they were typed, each one cheaply.

Textual inserts a printable key as soon as the field reads it, but runs a bound
key (backspace, ctrl+u, home, left, enter...) only after the key has bubbled up
through every container to the app, a few message hops later. Typed as one
burst (a fast typist, a paste-like terminal, tmux send-keys), `ctrl+u` then
`rrps(x=1)` cleared the field *after* the characters were in it. This field runs
its own bindings when it reads the key, in turn with the characters; keys it does
not bind (tab, ctrl+n) still bubble to the screen and the app.

Textual's Input also sets its virtual size (a reactive that re-lays out the whole
screen) to the text's width on every change: on the start form, a layout of some
forty widgets per keystroke (~20 ms, more on a loaded machine), so a fast typist's
keys queued behind it and landed in the next field clicked. Here the virtual size
changes without a layout: the field's own size does not depend on its text, and it
scrolls by that virtual size alone.
"""

from __future__ import annotations

from textual import events
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Input


class OrderedInput(Input):
    async def _on_key(self, event: events.Key) -> None:
        if not event.is_printable:
            for binding in self._bindings.key_to_bindings.get(event.key, ()):
                if not binding.priority and await self.app.run_action(binding.action, self):
                    event.prevent_default()
                    event.stop()
                    return
        await super()._on_key(event)

    def _watch_value(self, value: str) -> None:
        if not self.styles.auto_dimensions:  # a fixed-size field: its text's width needs no layout
            self.set_reactive(Widget.virtual_size, Size(self.content_width, 1))
            self.refresh()
        super()._watch_value(value)  # sets the same size (no layout), the suggestion, Changed
