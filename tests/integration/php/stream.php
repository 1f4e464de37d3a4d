<?php
// Sends "first", flushes it out, waits for the test's go-ahead
// (MARK_DIR/release-ID), then sends "second" and leaves MARK_DIR/done-ID.
$id = preg_replace('/[^a-z0-9-]/', '', $_GET['id'] ?? '');
$dir = getenv('MARK_DIR');
while (ob_get_level()) ob_end_flush();
echo "first\n";
flush();
for ($i = 0; $i < 1000 && !file_exists("$dir/release-$id"); $i++) usleep(10000);
echo "second\n";
touch("$dir/done-$id");
