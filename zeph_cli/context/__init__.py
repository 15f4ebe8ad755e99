"""Pure context engineering: prompt layers, budgets, assembly, reports (no I/O)."""
