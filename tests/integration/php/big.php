<?php
// 5 MiB that never repeats: md5 of 0, 1, 2, ... in hex, 32 bytes each.
for ($i = 0; $i < 5 * 1024 * 1024 / 32; $i++) echo md5((string)$i);
