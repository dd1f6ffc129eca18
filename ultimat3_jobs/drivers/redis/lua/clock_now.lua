-- clock_now: the store's clock, read once by a purge pass (drivers/retention_seam.py).
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     none
-- Reads nothing.
-- Answers Redis TIME in microseconds since the epoch.
return fmt(now_us())
