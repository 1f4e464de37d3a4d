<?php
// Answers, ends the response with fastcgi_finish_request(), then waits for
// the test's go-ahead (MARK_DIR/release-ID) and leaves MARK_DIR/done-ID.
$id = preg_replace('/[^a-z0-9-]/', '', $_GET['id'] ?? '');
$dir = getenv('MARK_DIR');
echo "finished\n";
fastcgi_finish_request();
for ($i = 0; $i < 1000 && !file_exists("$dir/release-$id"); $i++) usleep(10000);
touch("$dir/done-$id");
