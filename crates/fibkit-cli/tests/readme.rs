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

/// The two commands at the top of the README (build and verify, then every
/// test), as written there.
fn first_commands(readme: &str) -> Vec<String> {
    readme
        .lines()
        .skip_while(|line| *line != "```console")
        .skip(1)
        .take_while(|line| !line.starts_with("```"))
        .map(str::to_string)
        .collect()
}

/// In a clone without `../shared` beside it, both of the README's first
/// commands stop at once with a message saying where the data set belongs.
#[test]
fn without_the_shared_data_the_first_commands_say_what_is_missing() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let commands = first_commands(&readme);
    assert_eq!(commands.len(), 2, "{commands:?}");
    let verify_args = commands[0]
        .strip_prefix("cargo run --release --bin fibkit -- ")
        .unwrap_or_else(|| panic!("README's first command changed: {}", commands[0]));
    assert_eq!(commands[1], "./test.sh");

    let scratch = std::env::temp_dir().join(format!("fibkit-lone-clone-{}", std::process::id()));
    let clone = scratch.join("fibkit");
    std::fs::create_dir_all(&clone).unwrap();
    assert!(!scratch.join("shared").exists());

    let out = Command::new(env!("CARGO_BIN_EXE_fibkit"))
        .args(verify_args.split_whitespace())
        .current_dir(&clone)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("its folder ../shared/data does not exist")
            && stderr.contains("shared data set")
            && stderr.contains("from ../shared/data beside the repository clone"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one message, once: {stderr}");

    std::fs::copy(root.join("test.sh"), clone.join("test.sh")).unwrap();
    let out = Command::new("bash")
        .arg("./test.sh")
        .current_dir(&clone)
        .env_remove("FIBKIT_DATA_DIR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the shared data set is missing")
            && stderr.contains("../shared/data beside the repository clone"),
        "{stderr}"
    );
    std::fs::remove_dir_all(scratch).unwrap();
}
