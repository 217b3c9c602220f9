// Starts `pipeline lsp` for .hcl files. Everything the editor shows comes
// from the server: this file only launches it.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("pipeline").get("path", "pipeline");
  client = new LanguageClient(
    "pipeline",
    "pipeline",
    { command, args: ["lsp"] },
    { documentSelector: [{ scheme: "file", language: "pipeline-hcl" }] },
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
