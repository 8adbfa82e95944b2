"""Sections of a page: each a part of one page with its own callbacks, kept apart from the page.

Each has ``section(...)``, the part as the page places it, and ``register(app, ...)``, its
callbacks: ``capture`` (the capture form of the sessions page), and of the session page ``graphs``
(compiled graphs, ops, HLO text), ``stacks`` (the idle flame graph and idle time by Python line) and
``pod`` (workers x steps, worker groups, the workers whose lanes the timeline shows). A section
never imports a page (``pages`` imports sections); the numbers come from ``views``.
"""
