-- The review record: one per proposal shown (see review/init.lua), written and read by the
-- review's modules. Each field is declared once here, with why; code that uses a field not
-- declared fails `make lint` (dev/review_record.py reads these annotations: a record is named `d`,
-- or `replaced`, in review/ and changes/).
local M = {}

---@class (exact) GeminiCompanionReview
---@field key string the file under review: the normalised absolute path (how reviews are keyed)
---@field id integer the proposal's id from Python, echoed in every answer (tells it from a later one)
---@field channel integer|nil the channel it was opened on, where the decision goes (nil: the host's)
---@field carries_reason boolean the owner's answer carries a reason (a hook gate's deny): a
--- rejection's comments go there; else the review types them into the agent itself
---@field client string the MCP client that proposed it (its initialize clientInfo), for the list
---@field opened_at integer when it opened (os.time()), for the list's age column
---@field layout GeminiCompanionReviewLayout how it is shown (review/layouts/), chosen as it opens
---@field prev_win integer the window focused before it opened: focused again at teardown
---@field prev_mode string the user's mode as it opened: Terminal mode is given back at teardown
---@field wins integer[] the windows it made, the proposal's last (closed at teardown)
---@field had_hor boolean 'scrollopt' had "hor" as it opened (Neovim drops it with the last diff window)
---@field proposed integer the editable proposal's buffer (what accept sends)
---@field original integer|nil the read-only on-disk buffer (nil: the unified layout has none)
---@field name string the proposal buffer's name as the plugin gave it (a write to another name never accepts)
---@field disk_text string|nil the file's text on disk as the review shows it ('' if it does not exist;
--- nil once torn down): accept checks the disk still holds it
---@field exists boolean the file exists on disk (as the review shows it)
---@field old_text string|nil the text on disk, as text/hunks.lua compares it (nil once torn down)
---@field disk_eol boolean the file on disk ends with a newline (dropping the last hunk keeps that)
---@field disk_ff string|nil its line ends: 'dos' or 'unix' (nil: it has no line break)
---@field hunks table the proposal's hunks against old_text (review/keys.lua computes them)
---@field hunks_tick integer|nil the proposal's changedtick hunks were computed at (nil: compute again)
---@field edited boolean the user changed the proposal (it is never 'modified': see review/init.lua)
---@field decision string|nil what the user decided, as said ("accepted the edit to x.py")
---@field resolved boolean decided or closed: nothing may decide it again
---@field orphan boolean its session ended while edited: kept for the user, answers nobody
---@field filling boolean|nil a big review still filling its buffers (review/fill.lua): not decidable yet
---@field content string|nil the proposal while it fills (what closeDiff answers)
---@field big boolean|nil filled in slices (and accepted after reading its text in slices)
---@field reading boolean|nil a big review's text is being read to accept it
---@field compare fun()|nil a big review past diff mode: compare again soon (review/fill.lua)
---@field marking table|nil a big review's hunks drawn near the view (review/layouts/unified.lua's draw)
---@field marking_watched boolean|nil scrolling redraws `marking` (its autocommands are made once)

--- How a review is shown: review/layouts/split.lua or unified.lua, chosen once as it opens (the
--- rest of the review asks its layout rather than which one it is).
---@class GeminiCompanionReviewLayout
---@field create fun(d: GeminiCompanionReview, disk_lines: string[]|nil, ft: string|nil, exists: boolean) its buffers beside the proposal
---@field show fun(d: GeminiCompanionReview, settings: table, lines: table) its windows (d.wins), the changes drawn unless it fills
---@field render fun(d: GeminiCompanionReview) the changes drawn, once a big review is filled
---@field refresh fun(d: GeminiCompanionReview, lines: string[], exists: boolean) the file changed on disk
---@field teardown fun(d: GeminiCompanionReview) what is its own goes with the review

--- A record for proposal `id` of `key`, not yet shown (its buffers and windows come next).
--- `from`: {channel, carries_reason, client} as review/init.lua's M.open got them; `mode`: the
--- user's (nvim_get_mode()) as the proposal arrived.
---@return GeminiCompanionReview
function M.new(key, id, from, layout, mode)
  return {
    key = key,
    id = id,
    channel = from.channel,
    carries_reason = from.carries_reason or false,
    client = from.client or 'unknown client',
    opened_at = os.time(),
    layout = layout,
    prev_win = vim.api.nvim_get_current_win(),
    prev_mode = mode.mode,
    wins = {},
    had_hor = false,
    proposed = -1,
    name = '',
    exists = false,
    disk_eol = false,
    hunks = {},
    edited = false,
    resolved = false,
    orphan = false,
  }
end

return M
