"""What the dashboard shows, computed from xlaprof's analyses without importing Dash or Plotly.

View-models, each unit-testable on its own, building the figures' data and the tables' rows:
``timeline`` (lanes and what to draw of them for a range), ``gap_table`` (the server-side gaps
table), ``overview`` (the numbers of the cards and the sessions list), ``graphs`` (compiled graphs,
ops, HLO text, compile details), ``flame`` (the idle flame graph), ``stacks`` (a gap's or a
finding's stack, idle by line), ``pod`` (workers x steps), ``compare`` (two sessions), ``trend``
(across sessions), ``axis`` (the time axis unit and formatting). How the dashboard reaches sessions
(the analysis cache, the logdir guard, a URL's query, captures) is ``dashboard.data``.
"""
