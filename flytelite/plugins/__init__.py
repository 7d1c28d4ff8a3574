"""The task plugins, kept apart from the engine as Flyte keeps flyteplugins apart from flytepropeller.

`machinery` is what every plugin builds on (the plugin interface, command templating, process helpers, the
task processes' environment); `registry` picks the plugin for a task; each other module or package is one
plugin. The engine (flytelite.propeller) imports from here; nothing here imports the engine.
"""
