"""What the task plugins share (flyteplugins' pluginmachinery): the plugin interface and the attempt's context
(core), command templating (template), reading a task's specification (taskspec), task slots, process helpers,
the task processes' environment and site folder, the raw containers' data helper (copilot), and reading a
finished task's result."""
