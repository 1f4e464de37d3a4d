<?php
// A header block far larger than any proxy's header buffer.
header('X-Huge: ' . str_repeat('h', 256 * 1024));
echo "unreachable\n";
