"""How the dashboard reaches its data, without Dash: what a page draws is in ``views``, not here.

``logdir_guard`` (a session id from a URL to a run directory of the logdir, never anything else),
``query`` (the query string of a URL, read defensively), ``analysis_cache`` (sessions read and
analysed once per identity of their files, kept per session) and ``capture_job`` (new sessions:
captures started from the capture form, run by the server as ``xlaprof capture``). Nothing here
imports ``views``, a page or a section.
"""
