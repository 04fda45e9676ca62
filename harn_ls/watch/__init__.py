"""The file watcher: watchdog observer, debounce, and the settle before a batch goes to the model."""
