"""Plain-Python copies of Harn's own functions, used by tests as oracles.

harn-ls itself never needs these: it reads what Harn wrote. Each module says
which Harn function every copy mirrors.
"""
