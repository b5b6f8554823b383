"""Agent mode (issue #22): a model works in a sandboxed tool loop until it submits a
file or a budget ends; the submitted file is graded like any submission."""
