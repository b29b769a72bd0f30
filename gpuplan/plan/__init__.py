"""The resolved fleet: every reference followed, pools, grants, entitlements and headroom known."""
