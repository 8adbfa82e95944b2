"""The dashboard's pages, one module per URL (``app.py`` routes to them; the URLs are ``app``'s).

Each has ``layout(...)``, the page drawn for its URL, and ``register(app, state)``, its callbacks:
``session_list`` at ``/`` (every session of the logdir, the capture form, the trend), ``session`` at
``/session/<run>`` (one session), ``compare`` at ``/compare`` (two sessions side by side). A page
draws its parts of its own and the ``sections`` it is made of; the numbers come from ``views``.
"""
