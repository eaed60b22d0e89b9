//! Runs every `$ fibkit ...` example in README.md from the repository root
//! and checks its exit status and, where the README shows it, its output.

use std::path::PathBuf;
use std::process::Command;

/// (command line, expected output lines) for each example.
fn examples(readme: &str) -> Vec<(String, Vec<String>)> {
    let mut examples: Vec<(String, Vec<String>)> = Vec::new();
    let mut in_console = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_console = line == "```console";
            continue;
        }
        if !in_console {
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            examples.push((command.to_string(), Vec::new()));
        } else if let Some((_, output)) = examples.last_mut() {
            output.push(line.to_string());
        }
    }
    examples
}

#[test]
fn readme_examples_run() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let examples = examples(&readme);
    assert!(
        examples.len() >= 5,
        "expected the README's examples, found {}",
        examples.len()
    );
    for (command, expected) in examples {
        let mut words = command.split_whitespace();
        assert_eq!(
            words.next(),
            Some("fibkit"),
            "README example `{command}` must run fibkit"
        );
        let out = Command::new(env!("CARGO_BIN_EXE_fibkit"))
            .args(words)
            .current_dir(&root)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "`{command}` failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if !expected.is_empty() {
            assert_eq!(
                stdout.lines().collect::<Vec<_>>(),
                expected,
                "output of `{command}`"
            );
        }
    }
}
