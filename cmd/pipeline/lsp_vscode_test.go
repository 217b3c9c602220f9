package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// vscodeManifest is the part of a VS Code extension manifest (package.json)
// the editor reads to install and start an extension.
type vscodeManifest struct {
	Name             string            `json:"name"`
	Version          string            `json:"version"`
	Publisher        string            `json:"publisher"`
	Engines          map[string]string `json:"engines"`
	Main             string            `json:"main"`
	ActivationEvents []string          `json:"activationEvents"`
	Contributes      struct {
		Languages []struct {
			ID         string   `json:"id"`
			Extensions []string `json:"extensions"`
		} `json:"languages"`
		Configuration struct {
			Properties map[string]struct {
				Type    string `json:"type"`
				Default any    `json:"default"`
			} `json:"properties"`
		} `json:"configuration"`
	} `json:"contributes"`
	Dependencies map[string]string `json:"dependencies"`
}

// TestVSCodeExtension checks the VS Code extension in editors/vscode: its
// manifest has what VS Code requires of one (name, semver version,
// publisher, engines.vscode, main) and claims .hcl files under a language
// its activation event names, and extension.js, run by Node with stand-ins
// for the two modules VS Code provides, starts `pipeline lsp` for that
// language. VS Code itself is not run (it is not installed here).
func TestVSCodeExtension(t *testing.T) {
	dir := filepath.Join("..", "..", "editors", "vscode")
	raw, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m vscodeManifest
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("package.json: %v", err)
	}
	if !regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`).MatchString(m.Name) || m.Publisher == "" {
		t.Errorf("name %q and publisher %q: VS Code wants a lower-case name and a publisher", m.Name, m.Publisher)
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(m.Version) {
		t.Errorf("version %q is not semver", m.Version)
	}
	if !regexp.MustCompile(`^\^?\d+\.\d+\.\d+$`).MatchString(m.Engines["vscode"]) {
		t.Errorf("engines.vscode %q: VS Code refuses an extension without a version range", m.Engines["vscode"])
	}
	if _, err := os.Stat(filepath.Join(dir, m.Main)); err != nil {
		t.Errorf("main %q: %v", m.Main, err)
	}
	if m.Dependencies["vscode-languageclient"] == "" {
		t.Error("no vscode-languageclient dependency")
	}
	if len(m.Contributes.Languages) != 1 || !slices.Contains(m.Contributes.Languages[0].Extensions, ".hcl") {
		t.Fatalf("languages %+v: want one language for .hcl", m.Contributes.Languages)
	}
	lang := m.Contributes.Languages[0].ID
	if !slices.Contains(m.ActivationEvents, "onLanguage:"+lang) {
		t.Errorf("activationEvents %v do not start the extension for %q", m.ActivationEvents, lang)
	}
	if p := m.Contributes.Configuration.Properties["pipeline.path"]; p.Type != "string" || p.Default != "pipeline" {
		t.Errorf("pipeline.path setting %+v, want a string defaulting to pipeline", p)
	}

	node, err := exec.LookPath("node")
	if err != nil {
		missingInCI(t, "node is not installed (apt-get install nodejs): extension.js not run")
	}
	// Stand-ins for the modules VS Code provides: the setting as the user
	// left it (its default), and a client that prints how it would start
	// the server.
	mods := t.TempDir()
	for name, src := range map[string]string{
		"vscode/index.js": `exports.workspace = { getConfiguration: (s) => ({ get: (k, d) => d }) };`,
		"vscode-languageclient/node.js": `exports.LanguageClient = class {
  constructor(id, name, server, client) { console.log(JSON.stringify({ id, server, client })); }
  start() { return Promise.resolve(); }
  stop() { return Promise.resolve(); }
};`,
	} {
		path := filepath.Join(mods, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ext, err := filepath.Abs(filepath.Join(dir, m.Main))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "-e", `require(process.argv[1]).activate({ subscriptions: [] }).then(() => {})`, ext)
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var started struct {
		Server struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"server"`
		Client struct {
			DocumentSelector []struct {
				Language string `json:"language"`
			} `json:"documentSelector"`
		} `json:"client"`
	}
	if err := json.Unmarshal(out, &started); err != nil {
		t.Fatalf("extension.js printed %q: %v", out, err)
	}
	if started.Server.Command != "pipeline" || !slices.Equal(started.Server.Args, []string{"lsp"}) {
		t.Errorf("the extension starts %q %v, want pipeline [lsp]", started.Server.Command, started.Server.Args)
	}
	if len(started.Client.DocumentSelector) != 1 || started.Client.DocumentSelector[0].Language != lang {
		t.Errorf("document selector %+v, want the manifest's language %q", started.Client.DocumentSelector, lang)
	}
}
