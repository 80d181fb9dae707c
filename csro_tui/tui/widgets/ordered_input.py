"""A text field whose editing keys take effect in the order they were typed.

Textual inserts a printable key as soon as the field reads it, but runs a bound
key (backspace, ctrl+u, home, left, enter...) only after the key has bubbled up
through every container to the app, a few message hops later. Typed as one
burst (a fast typist, a paste-like terminal, tmux send-keys), `ctrl+u` then
`rrps(x=1)` cleared the field *after* the characters were in it. This field runs
its own bindings when it reads the key, in turn with the characters; keys it does
not bind (tab, ctrl+n) still bubble to the screen and the app.
"""

from __future__ import annotations

from textual import events
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
