<?php
// A length of its own, and a Content-Type said twice (header($f, false)):
// the later one is what the script meant.
header('Content-Type: text/plain');
header('Content-Type: application/x-later', false);
header('Content-Length: 5');
echo "hello";
