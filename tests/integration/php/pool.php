<?php
// Which pool answered (env[POOL_NAME] in its config).
echo getenv('POOL_NAME');
