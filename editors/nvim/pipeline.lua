-- Neovim: source this from your init.lua to run `pipeline lsp` for .hcl
-- files, with the built-in client (Neovim 0.7 and later). One server
-- serves every directory: each file is checked with the files beside it.
local client
vim.api.nvim_create_autocmd({ "BufRead", "BufNewFile" }, {
  pattern = "*.hcl",
  callback = function(args)
    client = client or vim.lsp.start_client({
      name = "pipeline",
      cmd = { "pipeline", "lsp" },
      root_dir = vim.fn.getcwd(),
    })
    if client then
      vim.lsp.buf_attach_client(args.buf, client)
      vim.bo[args.buf].omnifunc = "v:lua.vim.lsp.omnifunc"
    end
  end,
})
