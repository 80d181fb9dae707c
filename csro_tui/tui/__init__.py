"""The Textual app: the only part of csro_tui that imports textual.

Layers, from the core outwards:

- `model`, `adapt`, `reviewer`, `backend`, `diffing`: no
  textual import.  Plain data the screens show (`DashboardData`,
  `ReviewInfo`), adapters from session state and review requests, the
  queue-backed Reviewer the engine thread blocks on, the one door to the core
  (`Backend`, `LiveRun`); a game played by hand is `csro_tui.play.PlaySession`.
- `widgets/`: dashboard panels, each rendering part of a `DashboardData`.
- `screens/`: start, dashboard, review, editor, reject reason, inspector,
  play, sessions and timeline, help.
- `app.CsroApp`: runs the engine in a thread worker, turns its events into
  messages, pushes a review screen per proposal and hands the decision back.
"""
