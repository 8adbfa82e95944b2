"""What the dashboard shows, computed from xlaprof's analyses without importing Dash or Plotly.

View-models, each unit-testable on its own: ``timeline`` (lanes and what to draw of them for a
range), ``gap_table`` (the server-side gaps table), ``overview`` (the numbers of the cards and
the sessions list), ``analysis_cache`` (analyses kept per session), ``logdir_guard`` (URL session
ids to run directories, never anything else), ``axis`` (the time axis unit and formatting).
"""
