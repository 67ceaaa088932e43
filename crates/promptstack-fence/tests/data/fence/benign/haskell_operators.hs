module Main where

import Control.Monad ((>=>), (<=<))
import Data.Bits (shiftL, shiftR, (.&.))

main :: IO ()
main = do
  getLine >>= putStrLn . reverse
  mapM_ print [1 .. 3] >> putStrLn "done"
  let f = Just >=> pure . (+ 1)
  print (f 1)
  print ((1 `shiftL` 4) .&. 0xff)
  print $ (<<<) (+ 1) (* 2) 3
  where
    (<<<) g h = g . h
