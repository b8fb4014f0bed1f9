"""Second floor: the typed ``Memory`` facade over a store and an embedder, opening a store by backend name, and the one commit-with-retry loop."""
