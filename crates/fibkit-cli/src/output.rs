//! Writing results: `say!` and JSON lines on standard output, and output
//! files whose write errors name them.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};

/// `println!` that returns an error instead of panicking when standard output
/// is closed (`fibkit lookup ... | head`); main exits quietly on a broken pipe.
macro_rules! say {
    ($($arg:tt)*) => {
        writeln!(std::io::stdout(), $($arg)*)?
    };
}
pub(crate) use say;

/// Prints `value` as one line of JSON on standard output.
pub(crate) fn json_line(value: &serde_json::Value) -> Result<()> {
    say!("{value}");
    Ok(())
}

/// A buffered output file, or standard output, whose write errors name it
/// (a full disk shows up as `writing out.txt: No space left on device`).
pub(crate) struct Output {
    writer: BufWriter<Box<dyn Write>>,
    name: String,
}

impl Output {
    /// Creates `path`, or writes to standard output for `None`.
    pub(crate) fn create(path: Option<&Path>) -> Result<Output> {
        let (writer, name): (Box<dyn Write>, String) = match path {
            Some(path) => (
                Box::new(
                    File::create(path).with_context(|| format!("creating {}", path.display()))?,
                ),
                path.display().to_string(),
            ),
            None => (Box::new(std::io::stdout().lock()), "standard output".into()),
        };
        Ok(Output {
            writer: BufWriter::with_capacity(1 << 16, writer),
            name,
        })
    }

    /// `error` with the output's name; the kind is kept, so a closed pipe
    /// is still recognised as one.
    fn named(&self, error: std::io::Error) -> std::io::Error {
        std::io::Error::new(error.kind(), format!("writing {}: {error}", self.name))
    }
}

impl Write for Output {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.writer.write(bytes).map_err(|e| self.named(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush().map_err(|e| self.named(e))
    }
}
