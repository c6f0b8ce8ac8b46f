// Placeholder translation unit until the GPU model lands (keeps the library non-empty).
