"""Stage 0, shared by every stage: interval arithmetic on numpy arrays (``intervals``), a result's
short repr (``notebook_repr``) and its rows as a notebook table (``tables``). Imports no other stage.
"""
