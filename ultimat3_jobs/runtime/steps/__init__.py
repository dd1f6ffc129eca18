"""Durable steps in the worker: where their writes run (``writer.py``) and how an attempt's
steps are bound, suspended and unwound (``attempt.py``)."""
