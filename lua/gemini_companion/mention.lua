-- `require('gemini_companion.mention').at_mentioned(...)`, as the README and :help have long
-- named it: the public path of Claude Code's at-mention, which lives in agents/claude/.
return require('gemini_companion.agents.claude.mention')
