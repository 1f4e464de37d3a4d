<?php
// One field of 5,000 bytes: within PHP's and the CGI head's limits, past
// what a response head of weft holds for a handler's fields.
header('X-Wide: ' . str_repeat('w', 5000));
echo "unreachable\n";
