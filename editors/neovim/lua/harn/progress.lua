-- Work-done progress from harn-ls ($/progress: a big project's first load, its recall index build)
-- shown in the command line. Neovim 0.10+ announces each message with the LspProgress autocommand;
-- 0.7-0.9 with `User LspProgressUpdate`, the messages read from vim.lsp.util.get_progress_messages().
-- Neovim itself creates the tokens and keeps the state: this only shows harn-ls's.
local M = {}

M.seen = {} -- the last lines shown (at most 50), newest last: for :messages-free checks and tests
local titles = {} -- token -> title (0.10+: reports and ends carry no title)

local function is_harn(client_id)
  local client = client_id and vim.lsp.get_client_by_id(client_id)
  -- 'harn_ls' is the vim.lsp.config name (0.11+), 'harn-ls' the client's name on older Neovims
  return client ~= nil and (client.name == 'harn-ls' or client.name == 'harn_ls')
end

--- "Harn: loading proj 42% memory logs 412 of 888 MB", or the end's message.
function M.format(title, value)
  local parts = { title or 'Harn' }
  if value.kind ~= 'end' and type(value.percentage) == 'number' then
    table.insert(parts, string.format('%d%%', value.percentage))
  end
  if type(value.message) == 'string' and value.message ~= '' then
    table.insert(parts, value.message)
  elseif value.kind == 'end' then
    table.insert(parts, 'done')
  end
  return table.concat(parts, ' ')
end

local function show(text)
  table.insert(M.seen, text)
  if #M.seen > 50 then
    table.remove(M.seen, 1)
  end
  -- progress text names a folder of the project: echoed as plain text, never as a command
  vim.api.nvim_echo({ { text:gsub('[%c]', ' '), 'ModeMsg' } }, false, {})
end

function M.setup(group)
  if vim.fn.exists('##LspProgress') == 1 then
    vim.api.nvim_create_autocmd('LspProgress', {
      group = group,
      callback = function(args)
        local data = args.data or {}
        local params = data.params or {}
        local value = params.value
        if type(value) ~= 'table' or not is_harn(data.client_id) then
          return
        end
        if value.kind == 'begin' then
          titles[params.token] = value.title
        end
        show(M.format(titles[params.token], value))
        if value.kind == 'end' then
          titles[params.token] = nil
        end
      end,
    })
  else
    vim.api.nvim_create_autocmd('User', {
      group = group,
      pattern = 'LspProgressUpdate',
      callback = function()
        for _, msg in ipairs(vim.lsp.util.get_progress_messages()) do
          if msg.progress and (msg.name == 'harn-ls' or msg.name == 'harn_ls') then
            show(M.format(msg.title, { kind = msg.done and 'end' or 'report', percentage = msg.percentage,
                                       message = msg.message }))
          end
        end
      end,
    })
  end
end

return M
