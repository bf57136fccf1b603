"""Shared pieces of the dashboard pages: `cache` (the only st.cache_* wrappers) and `widgets`."""
