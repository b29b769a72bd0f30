"""Reading the inputs: files with positions (load, yamlevents), models (sources), git revisions (git)."""
